"""Reconcile: a request's planned vs created vs published vs rejected / skipped / cancelled / duplicated / still
retrying, per cell, from the catalog and Dagster's facts; optionally repaired (missing materializations recorded,
versions stuck mid-write abandoned)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.states import IN_PROGRESS, VersionState
from backfill_assets.engine.plan.reconcile import reconcile as reconcile_request
from backfill_assets.engine.plan.reconcile_records import GAP_NO_MATERIALIZATION, Report
from backfill_assets.engine.plan.request_cells import RequestCells
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.tables.records import SyncResult, TableLag

from .context import ServiceContext
from .ports import DagsterPort, RequestRunFacts

if TYPE_CHECKING:  # the warehouse module imports pandas and pyarrow: only where files are read
    from backfill_assets.engine.store.storage import Warehouse


class RepairAction(StrEnum):
    """What ``reconcile --repair`` did: to a version with a gap, or to a published table that lagged."""

    RECORDED_MATERIALIZATION = "recorded materialization"
    ABANDONED = "abandoned"
    TABLE_SYNCED = "table synced"
    TABLE_NOT_SYNCED = "table not synced"


@dataclass(frozen=True)
class VersionRepair(JsonRecord):
    """A gap repaired: a published version's missing materialization recorded, or a version stuck mid-write
    abandoned."""

    version_id: str
    action: RepairAction


@dataclass(frozen=True)
class TableSynced:
    """A lagging published table brought in line: its sync, whose fields its JSON holds beside ``action``."""

    sync: SyncResult
    action: RepairAction = RepairAction.TABLE_SYNCED

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action.value, **self.sync.as_dict()}


@dataclass(frozen=True)
class TableNotSynced:
    """A lagging published table the repair could not bring in line, and why."""

    table: str
    error: str
    action: RepairAction = RepairAction.TABLE_NOT_SYNCED

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action.value, "table": self.table, "error": self.error}


Repair = VersionRepair | TableSynced | TableNotSynced


@dataclass(frozen=True)
class Reconciliation:
    report: Report
    repaired: tuple[Repair, ...] = field(default=())
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
        return {**self.report.as_dict(), "repaired": [r.as_dict() for r in self.repaired],
                "tables": [t.as_dict() for t in self.tables]}


def reconcile(context: ServiceContext, request_id: str, verify_files: bool, repair: bool) -> Reconciliation:
    Ledger(context.catalog).get(validate_request_id(request_id))
    dagster = context.require_dagster("reconcile (Dagster's runs and materializations)")
    warehouse = context.warehouse if verify_files else None

    def report_now() -> Report:
        read = RequestCells.read(context.catalog, request_id)  # one read for Dagster's facts and the report
        facts = dagster.request_run_facts(context.catalog, request_id, read)
        return report_of(context.catalog, context.graph, request_id, facts, warehouse, read)

    report = report_now()
    assets = _request_assets(report, context)
    lags = tuple(context.tables.lag(context.catalog, assets))
    lagging = [t for t in lags if not t.in_line]
    if not (repair and (report.gaps or lagging)):
        return Reconciliation(report, tables=lags)
    repaired: list[Repair] = list(_repair_gaps(dagster, context.catalog, report)) if report.gaps else []
    if lagging:
        synced = context.tables.sync(context.catalog, sorted({t.asset for t in lagging}))
        repaired += [TableSynced(r) for r in synced.synced if r.days]
        repaired += [TableNotSynced(table, why) for table, why in synced.failed]
        lags = tuple(context.tables.lag(context.catalog, assets))
    return Reconciliation(report_now(), tuple(repaired), lags)


def report_of(
    catalog: Catalog, graph: AssetGraph, request_id: str, facts: RequestRunFacts, warehouse: Warehouse | None = None,
    read: RequestCells | None = None,
) -> Report:
    """The request's reconcile report from the catalog and Dagster's facts; ``warehouse`` re-hashes its published
    files; ``read``: the cells and overrides the facts were made from. Reconcile's and the ``backfill_report``
    job's alike."""
    return reconcile_request(
        catalog, request_id, graph, run_status_of=facts.run_statuses.get,
        materialized_version_ids=set(facts.materialized_version_ids), warehouse=warehouse,
        forced_cancels=facts.forced_cancels, read=read,
    )


def _repair_gaps(dagster: DagsterPort, catalog: Catalog, report: Report) -> list[VersionRepair]:
    """Record the missing materialization of a published version, or abandon a version stuck mid-write."""
    actions: list[VersionRepair] = []
    for gap in report.gaps:
        version = catalog.get(gap.version_id)
        if gap.gap == GAP_NO_MATERIALIZATION:
            dagster.record_materialization(version)
            catalog.record_repair(version.version_id, "materialization recorded by reconcile --repair")
            actions.append(VersionRepair(version.version_id, RepairAction.RECORDED_MATERIALIZATION))
        elif VersionState(version.state) in IN_PROGRESS:
            catalog.abandon(version.version_id, f"abandoned by reconcile --repair: {gap.gap}")
            actions.append(VersionRepair(version.version_id, RepairAction.ABANDONED))
    return actions


def _request_assets(report: Report, context: ServiceContext) -> list[str]:
    """The request's gated assets, in lineage order."""
    named = {cell.asset for cell in report.cells}
    return [a for a in context.graph.data_assets if a in named]
