"""Reconcile: a request's planned vs created vs published vs rejected / skipped / cancelled / duplicated / still
retrying, per cell, from the catalog and Dagster's facts; optionally repaired (missing materializations recorded,
versions stuck mid-write abandoned)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from backfill_assets.engine.plan.reconcile import Report
from backfill_assets.engine.store.ledger import Ledger, validate_request_id

from .context import ServiceContext


@dataclass(frozen=True)
class Reconciliation:
    report: Report
    repaired: tuple[dict[str, Any], ...] = field(default=())

    @property
    def complete(self) -> bool:
        """Every cell published or deliberately skipped, and no gap between the catalog and Dagster."""
        return self.report.complete and not self.report.gaps

    def as_dict(self) -> dict[str, Any]:
        return {**self.report.as_dict(), "repaired": list(self.repaired)}


def reconcile(context: ServiceContext, request_id: str, verify_files: bool, repair: bool) -> Reconciliation:
    from backfill_assets.integration.runs.reconcile_facts import repair as repair_gaps
    from backfill_assets.integration.runs.reconcile_facts import request_report

    Ledger(context.catalog).get(validate_request_id(request_id))
    instance = context.instance_of()
    warehouse = context.warehouse if verify_files else None
    report = request_report(instance, context.catalog, context.graph, request_id, warehouse)
    if not (repair and report.gaps):
        return Reconciliation(report)
    repaired = tuple(repair_gaps(instance, context.catalog, report))
    return Reconciliation(request_report(instance, context.catalog, context.graph, request_id, warehouse), repaired)
