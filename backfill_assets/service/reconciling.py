"""Reconcile: a request's planned vs created vs published vs rejected / skipped / cancelled / duplicated / still
retrying, per cell, from the catalog and Dagster's facts; optionally repaired (missing materializations recorded,
versions stuck mid-write abandoned)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backfill_assets.engine.plan.reconcile import Report
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.tables.records import TableLag

from .context import ServiceContext

# What a repair did to a published table that lagged (beside "recorded materialization" and the like).
TABLE_SYNCED, TABLE_NOT_SYNCED = "table synced", "table not synced"


@dataclass(frozen=True)
class Reconciliation:
    report: Report
    repaired: tuple[dict[str, Any], ...] = field(default=())
    # The published tables of the request's assets: each one's position and the days it is behind the pointers.
    tables: tuple[TableLag, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """Every cell published or deliberately skipped, and no gap between the catalog and Dagster."""
        return self.report.complete and not self.report.gaps

    @property
    def tables_lagging(self) -> tuple[TableLag, ...]:
        return tuple(t for t in self.tables if not t.in_line)

    def as_dict(self) -> dict[str, Any]:
        return {**self.report.as_dict(), "repaired": list(self.repaired),
                "tables": [t.as_dict() for t in self.tables]}


def reconcile(context: ServiceContext, request_id: str, verify_files: bool, repair: bool) -> Reconciliation:
    from backfill_assets.integration.runs.reconcile_facts import repair as repair_gaps
    from backfill_assets.integration.runs.reconcile_facts import request_report

    Ledger(context.catalog).get(validate_request_id(request_id))
    instance = context.instance_of()
    warehouse = context.warehouse if verify_files else None
    report = request_report(instance, context.catalog, context.graph, request_id, warehouse)
    assets = _request_assets(report, context)
    lags = tuple(context.tables.lag(context.catalog, assets))
    lagging = [t for t in lags if not t.in_line]
    if not (repair and (report.gaps or lagging)):
        return Reconciliation(report, tables=lags)
    repaired = list(repair_gaps(instance, context.catalog, report)) if report.gaps else []
    if lagging:
        synced = context.tables.sync(context.catalog, sorted({t.asset for t in lagging}))
        repaired += [{"action": TABLE_SYNCED, **r.as_dict()} for r in synced.synced if r.days]
        repaired += [{"action": TABLE_NOT_SYNCED, "table": table, "error": why} for table, why in synced.failed]
        lags = tuple(context.tables.lag(context.catalog, assets))
    report = request_report(instance, context.catalog, context.graph, request_id, warehouse)
    return Reconciliation(report, tuple(repaired), lags)


def _request_assets(report: Report, context: ServiceContext) -> list[str]:
    """The request's gated assets, in lineage order."""
    named = {cell.asset for cell in report.cells}
    return [a for a in context.graph.data_assets if a in named]
