"""The OpenLineage observer of a gated step, when the library's setting turns lineage on (docs/LINEAGE.md)."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.wap.observer import AttemptObserver
from backfill_assets.integration.resources import BackfillResource


def lineage_observers(context: dg.AssetExecutionContext, backfill: BackfillResource) -> list[AttemptObserver]:
    """None when lineage is off (the default); else one observer sending to the configured target, which warns in
    the step's log when a send fails. A setting that is wrong fails the step before it writes anything."""
    try:
        target = backfill.lineage_target()
    except BackfillError as exc:
        raise dg.Failure(description=f"OpenLineage: {exc}", allow_retries=False) from exc
    if not target.enabled:
        return []
    try:
        # Only imported when on: openlineage-python is the optional extra ``backfill_assets[openlineage]``.
        from backfill_assets.lineage.emitter import OpenLineageObserver
        from backfill_assets.lineage.events import LineageNaming
    except ImportError as exc:
        raise dg.Failure(
            description=(
                f"OpenLineage is on ({target.describe()}) but openlineage-python is not installed: "
                f"pip install 'backfill_assets[openlineage]' ({exc})"
            ),
            allow_retries=False,
        ) from exc
    naming = LineageNaming.for_warehouse(target.namespace, context.job_name, backfill.settings().warehouse_root)
    return [OpenLineageObserver(target, naming, context.log.warning)]
