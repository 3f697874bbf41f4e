"""backfill_assets: safe, auditable re-processing of historical data on Dagster.

The public API. Names load on first use, so that the engine and the CLI's offline commands do not import Dagster;
type checkers and editors read the explicit imports below::

    from backfill_assets import BusinessCalendar, gated_asset, backfill_definitions, unique_key, not_empty
    from backfill_assets import Backfills, RequestInput  # the service: every operation, typed
    from backfill_assets import backfills_for_instance  # the service on a Dagster instance
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from backfill_assets.engine.model.access import (
        AccessPolicy,
        CleanupPolicy,
    )
    from backfill_assets.engine.model.code_inputs import (
        CodeInputs,
    )
    from backfill_assets.engine.model.day_order import (
        DayOrder,
    )
    from backfill_assets.engine.model.errors import (
        AssetOwnedElsewhere,
        BackfillError,
        CatalogBusy,
        CatalogDamaged,
        CatalogEmpty,
        CatalogSchemaMismatch,
        IllegalTransition,
        IntegrityError,
        InvalidField,
        InvalidInput,
        ManifestMismatch,
        NotAuthorized,
        NotFound,
        PlanError,
        PublishConflict,
        RefusedField,
        StorageError,
        TargetBusy,
        UnsafeName,
    )
    from backfill_assets.engine.model.graph import (
        BOOL,
        FLOAT,
        INT,
        STRING,
        TIMESTAMP,
    )
    from backfill_assets.engine.model.intervals import (
        BusinessCalendar,
        Interval,
    )
    from backfill_assets.engine.model.run_context import (
        RunContext,
    )
    from backfill_assets.engine.model.settings import (
        Settings,
    )
    from backfill_assets.engine.store.db import (
        retry_transient,
        sql_engine,
    )
    from backfill_assets.engine.wap.audit import (
        Audit,
        AuditResult,
        audit,
        matches_schema,
        not_empty,
        row_count,
        totals_match,
        unique_key,
    )
    from backfill_assets.integration.api import (
        backfill_definitions,
    )
    from backfill_assets.integration.assets.partitions import (
        daily_partitions_for,
    )
    from backfill_assets.integration.declarations import (
        BackfillAsset,
        gated_asset,
        side_effect_asset,
    )
    from backfill_assets.integration.external import (
        run_external,
    )
    from backfill_assets.integration.graphs import (
        graph_of,
    )
    from backfill_assets.integration.published_io import (
        PUBLISHED_IO_MANAGER,
        PublishedDataIOManager,
    )
    from backfill_assets.integration.resources import (
        BackfillResource,
    )
    from backfill_assets.integration.service_wiring import (
        backfills_for_instance,
    )
    from backfill_assets.service import (
        Backfills,
        ClearInput,
        DownstreamPolicy,
        Order,
        ReprocessPolicy,
        RequestInput,
        RequestSource,
    )

_PUBLIC = {
    "BusinessCalendar": "backfill_assets.engine.model.intervals",
    "Interval": "backfill_assets.engine.model.intervals",
    "RunContext": "backfill_assets.engine.model.run_context",
    "Settings": "backfill_assets.engine.model.settings",
    "BackfillError": "backfill_assets.engine.model.errors",
    "CatalogSchemaMismatch": "backfill_assets.engine.model.errors",
    "InvalidInput": "backfill_assets.engine.model.errors",
    "InvalidField": "backfill_assets.engine.model.errors",
    "RefusedField": "backfill_assets.engine.model.errors",
    "UnsafeName": "backfill_assets.engine.model.errors",
    "IllegalTransition": "backfill_assets.engine.model.errors",
    "PublishConflict": "backfill_assets.engine.model.errors",
    "IntegrityError": "backfill_assets.engine.model.errors",
    "NotFound": "backfill_assets.engine.model.errors",
    "NotAuthorized": "backfill_assets.engine.model.errors",
    "AccessPolicy": "backfill_assets.engine.model.access",
    "AssetOwnedElsewhere": "backfill_assets.engine.model.errors",
    "CleanupPolicy": "backfill_assets.engine.model.access",
    "PlanError": "backfill_assets.engine.model.errors",
    "StorageError": "backfill_assets.engine.model.errors",
    "TargetBusy": "backfill_assets.engine.model.errors",
    "CatalogBusy": "backfill_assets.engine.model.errors",
    "CatalogDamaged": "backfill_assets.engine.model.errors",
    "CatalogEmpty": "backfill_assets.engine.model.errors",
    "ManifestMismatch": "backfill_assets.engine.model.errors",
    "sql_engine": "backfill_assets.engine.store.db",
    "retry_transient": "backfill_assets.engine.store.db",
    "DayOrder": "backfill_assets.engine.model.day_order",
    "CodeInputs": "backfill_assets.engine.model.code_inputs",
    "STRING": "backfill_assets.engine.model.graph",
    "FLOAT": "backfill_assets.engine.model.graph",
    "INT": "backfill_assets.engine.model.graph",
    "TIMESTAMP": "backfill_assets.engine.model.graph",
    "BOOL": "backfill_assets.engine.model.graph",
    "Audit": "backfill_assets.engine.wap.audit",
    "AuditResult": "backfill_assets.engine.wap.audit",
    "audit": "backfill_assets.engine.wap.audit",
    "row_count": "backfill_assets.engine.wap.audit",
    "unique_key": "backfill_assets.engine.wap.audit",
    "matches_schema": "backfill_assets.engine.wap.audit",
    "totals_match": "backfill_assets.engine.wap.audit",
    "not_empty": "backfill_assets.engine.wap.audit",
    "BackfillAsset": "backfill_assets.integration.declarations",
    "gated_asset": "backfill_assets.integration.declarations",
    "side_effect_asset": "backfill_assets.integration.declarations",
    "backfill_definitions": "backfill_assets.integration.api",
    "graph_of": "backfill_assets.integration.graphs",
    "daily_partitions_for": "backfill_assets.integration.assets.partitions",
    "PUBLISHED_IO_MANAGER": "backfill_assets.integration.published_io",
    "PublishedDataIOManager": "backfill_assets.integration.published_io",
    "run_external": "backfill_assets.integration.external",
    "BackfillResource": "backfill_assets.integration.resources",
    "backfills_for_instance": "backfill_assets.integration.service_wiring",
    "Backfills": "backfill_assets.service",
    "RequestInput": "backfill_assets.service",
    "ClearInput": "backfill_assets.service",
    "ReprocessPolicy": "backfill_assets.service",
    "DownstreamPolicy": "backfill_assets.service",
    "Order": "backfill_assets.service",
    "RequestSource": "backfill_assets.service",
}

__all__ = [
    "AccessPolicy",
    "AssetOwnedElsewhere",
    "Audit",
    "AuditResult",
    "BOOL",
    "BackfillAsset",
    "BackfillError",
    "BackfillResource",
    "Backfills",
    "BusinessCalendar",
    "CatalogBusy",
    "CatalogDamaged",
    "CatalogEmpty",
    "CatalogSchemaMismatch",
    "CleanupPolicy",
    "ClearInput",
    "CodeInputs",
    "DayOrder",
    "DownstreamPolicy",
    "FLOAT",
    "INT",
    "IllegalTransition",
    "IntegrityError",
    "Interval",
    "InvalidField",
    "InvalidInput",
    "ManifestMismatch",
    "NotAuthorized",
    "NotFound",
    "Order",
    "PUBLISHED_IO_MANAGER",
    "PlanError",
    "PublishConflict",
    "PublishedDataIOManager",
    "RefusedField",
    "ReprocessPolicy",
    "RequestInput",
    "RequestSource",
    "RunContext",
    "STRING",
    "Settings",
    "StorageError",
    "TIMESTAMP",
    "TargetBusy",
    "UnsafeName",
    "audit",
    "backfill_definitions",
    "backfills_for_instance",
    "daily_partitions_for",
    "gated_asset",
    "graph_of",
    "matches_schema",
    "not_empty",
    "retry_transient",
    "row_count",
    "run_external",
    "side_effect_asset",
    "sql_engine",
    "totals_match",
    "unique_key",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'backfill_assets' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
