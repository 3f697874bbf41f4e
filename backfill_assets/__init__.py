"""backfill_assets: safe, auditable re-processing of historical data on Dagster.

The public API, imported lazily so that the engine and the CLI's offline commands do not import Dagster::

    from backfill_assets import BusinessCalendar, gated_asset, backfill_definitions, primary_key, not_empty
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "BusinessCalendar": "backfill_assets.core.intervals",
    "Interval": "backfill_assets.core.intervals",
    "Settings": "backfill_assets.core.settings",
    "InvalidInput": "backfill_assets.core.errors",
    "sql_engine": "backfill_assets.core.db",
    "retry_transient": "backfill_assets.core.db",
    "STRING": "backfill_assets.core.graph",
    "FLOAT": "backfill_assets.core.graph",
    "INT": "backfill_assets.core.graph",
    "TIMESTAMP": "backfill_assets.core.graph",
    "BOOL": "backfill_assets.core.graph",
    "Audit": "backfill_assets.core.audit",
    "AuditResult": "backfill_assets.core.audit",
    "audit": "backfill_assets.core.audit",
    "row_count": "backfill_assets.core.audit",
    "primary_key": "backfill_assets.core.audit",
    "schema": "backfill_assets.core.audit",
    "totals_match": "backfill_assets.core.audit",
    "not_empty": "backfill_assets.core.audit",
    "BackfillAsset": "backfill_assets.defs.api",
    "gated_asset": "backfill_assets.defs.api",
    "side_effect_asset": "backfill_assets.defs.api",
    "backfill_definitions": "backfill_assets.defs.api",
    "graph_of": "backfill_assets.defs.api",
    "BackfillResource": "backfill_assets.defs.resources",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'backfill_assets' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
