"""What a code location's origin says about the code it loads."""

from __future__ import annotations

from typing import Any

import dagster as dg


def loadable_target(origin: Any) -> Any | None:
    """The ``LoadableTargetOrigin`` of a code location the process starts itself (``-m``, ``-f``, a workspace's
    ``python_module``), or None: a code server it only connects to (``grpc_server`` in workspace.yaml, ``dagster
    dev``'s, a cluster's) runs code this process cannot see, and Dagster's origin raises when asked for it."""
    try:
        return getattr(origin, "loadable_target_origin", None)
    except dg.DagsterInvariantViolationError:
        return None
