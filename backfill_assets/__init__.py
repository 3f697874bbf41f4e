"""backfill_assets: safe, auditable re-processing of historical data on Dagster.

The public API, imported lazily so that the engine and the CLI's offline commands do not import Dagster::

    from backfill_assets import BusinessCalendar, gated_asset, backfill_definitions, primary_key, not_empty
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_PUBLIC = {
    "BusinessCalendar": "backfill_assets.engine.model.intervals",
    "Interval": "backfill_assets.engine.model.intervals",
    "Settings": "backfill_assets.engine.model.settings",
    "InvalidInput": "backfill_assets.engine.model.errors",
    "sql_engine": "backfill_assets.engine.store.db",
    "retry_transient": "backfill_assets.engine.store.db",
    "STRING": "backfill_assets.engine.model.graph",
    "FLOAT": "backfill_assets.engine.model.graph",
    "INT": "backfill_assets.engine.model.graph",
    "TIMESTAMP": "backfill_assets.engine.model.graph",
    "BOOL": "backfill_assets.engine.model.graph",
    "Audit": "backfill_assets.engine.wap.audit",
    "AuditResult": "backfill_assets.engine.wap.audit",
    "audit": "backfill_assets.engine.wap.audit",
    "row_count": "backfill_assets.engine.wap.audit",
    "primary_key": "backfill_assets.engine.wap.audit",
    "schema": "backfill_assets.engine.wap.audit",
    "totals_match": "backfill_assets.engine.wap.audit",
    "not_empty": "backfill_assets.engine.wap.audit",
    "BackfillAsset": "backfill_assets.integration.api",
    "gated_asset": "backfill_assets.integration.api",
    "side_effect_asset": "backfill_assets.integration.api",
    "backfill_definitions": "backfill_assets.integration.api",
    "graph_of": "backfill_assets.integration.graphs",
    "BackfillResource": "backfill_assets.integration.resources",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'backfill_assets' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
