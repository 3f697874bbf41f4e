"""What a gated step runs in: an asset's step (one interval, or a range) or a batched chunk run's op. Both hand the
gate the same things (the run, the instance, the log, the resources, the op's config)."""

from __future__ import annotations

from typing import TypeAlias

import dagster as dg

StepContext: TypeAlias = dg.AssetExecutionContext | dg.OpExecutionContext
