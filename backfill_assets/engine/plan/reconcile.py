"""Request-level reconciliation (docs/ARCHITECTURE.md#reconcile-rollback-gc): planned, created, published, the rest.

Pure over the catalog plus facts the caller gathers from Dagster (run statuses, which versions have a
materialization), so the same report is produced by the CLI, tests and the HTML page.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, AbstractSet, Any, Callable, Iterable, Sequence

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellOrigin, SkipKind
from backfill_assets.engine.model.errors import ManifestMismatch
from backfill_assets.engine.model.graph import NOT_VERSIONED, AssetGraph
from backfill_assets.engine.model.overrides import Override, OverrideAction
from backfill_assets.engine.model.states import FINISHED_RUN_STATUSES, IN_PROGRESS, RunStatus, VersionState, member
from backfill_assets.engine.plan.reconcile_downstream import affected_downstream_report
from backfill_assets.engine.plan.reconcile_records import (
    CELL_ROLLED_BACK,
    FORCED_CANCEL,
    GAP_FILE,
    GAP_MANIFEST,
    GAP_NO_MATERIALIZATION,
    GAP_STUCK,
    NOT_REPRODUCIBLE,
    CellReport,
    Report,
    ReportGap,
    ReportRequest,
    ReportRun,
    ReportTotals,
    VersionReport,
)
from backfill_assets.engine.plan.request_cells import RequestCells
from backfill_assets.engine.store.catalog import Catalog, Version
from backfill_assets.engine.store.catalog_records import PublishedHead
from backfill_assets.engine.store.handoffs import Handoffs
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.pauses import Pauses

if TYPE_CHECKING:  # the warehouse module imports pandas and pyarrow: only where files are read
    from backfill_assets.engine.store.storage import Warehouse


def _change(version: Version, replaced: Version | None) -> dict[str, Any] | None:
    if replaced is None or version.rows is None:
        return None
    change: dict[str, Any] = {"rows": int(version.rows) - int(replaced.rows or 0)}
    for column, stats in (version.stats or {}).items():
        old = (replaced.stats or {}).get(column, {})
        if "sum" in stats and stats["sum"] is not None and old.get("sum") is not None:
            delta = round(float(stats["sum"]) - float(old["sum"]), 4)
            if delta:
                change[f"sum_{column}"] = delta
    return change


def recomputed_on_current_upstream(version: Version, replaced: Version | None) -> bool | str | None:
    """Whether ``version`` was computed from different inputs than the version it replaced.

    Inputs are the upstream versions read and, for a cell that reads a source system, the source fingerprint of
    its interval (upstream versions alone say nothing for a source-reading asset, whose inputs are ``{}``). A
    source that was not fingerprinted on either side gives NOT_REPRODUCIBLE unless the upstream versions already
    differ. None when there is nothing to compare (no replaced version, or a version that never wrote).
    """
    if replaced is None or version.input_versions is None or replaced.input_versions is None:
        return None
    if version.input_versions != replaced.input_versions:
        return True
    # An ordinary Dagster asset's data is read like a source's: nothing says whether it changed but a fingerprint.
    unversioned = NOT_VERSIONED in version.input_versions.values()
    reads_source = bool(version.source_fingerprint or replaced.source_fingerprint) or not version.input_versions
    reads_source = reads_source or unversioned
    if not reads_source:
        return False
    if not version.source_fingerprint or not replaced.source_fingerprint:
        return NOT_REPRODUCIBLE
    return version.source_fingerprint != replaced.source_fingerprint


@dataclass(frozen=True)
class _Facts:
    """What reconcile knows beyond the catalog (see ``reconcile``'s arguments)."""

    run_status_of: Callable[[str], RunStatus | None]
    materialized_version_ids: set[str] | None
    warehouse: Warehouse | None
    forced_cancels: frozenset[str]

    def reads_as(self, run_id: str) -> str | None:
        return FORCED_CANCEL if run_id in self.forced_cancels else None


def _version_report(version: Version, by_id: dict[str, Version], overrides: list[Override], facts: _Facts,
                    ) -> VersionReport:
    replaced = by_id.get(version.expected_previous_version_id or "")
    return VersionReport(
        version_id=version.version_id,
        state=member(VersionState, version.state),
        logical_run_id=version.logical_run_id,
        dagster_run_id=version.dagster_run_id,
        attempt_no=int(version.attempt_no),
        interval_start=version.interval_start,
        interval_end=version.interval_end,
        requested_at=version.requested_at,
        started_at=version.started_at,
        ended_at=version.ended_at,
        published_at=version.published_at,
        code_version=version.code_version,
        params_digest=version.params_digest,
        rows=version.rows,
        sha256=version.sha256,
        input_versions=version.input_versions,
        checks=version.checks,
        error=version.error,
        replaced_version_id=version.expected_previous_version_id,
        change=_change(version, replaced),
        recomputed_on_current_upstream=recomputed_on_current_upstream(version, replaced),
        source_fingerprint=version.source_fingerprint,
        gap=_gap(version, facts.run_status_of, facts.materialized_version_ids, facts.warehouse),
        worker=version.worker,
        overrides=tuple(o for o in overrides if o.version_id == version.version_id),
        params=version.params,
    )


def reconcile(
    catalog: Catalog,
    request_id: str,
    graph: AssetGraph,
    *,
    run_status_of: Callable[[str], RunStatus | None],
    materialized_version_ids: set[str] | None = None,
    warehouse: Warehouse | None = None,
    forced_cancels: frozenset[str] = frozenset(),
    read: RequestCells | None = None,
) -> Report:
    """``run_status_of(dagster_run_id)`` → SUCCESS/FAILURE/CANCELED/QUEUED/STARTED/...; ``materialized_version_ids``
    (None = unknown) enables the crash-gap check; ``warehouse`` enables re-hashing published files;
    ``forced_cancels``: the run ids marked cancelled without their worker's confirmation (read as FORCED_CANCEL);
    ``read``: the request's cells and overrides when the caller has read them (else read here)."""
    facts = _Facts(run_status_of, materialized_version_ids, warehouse, forced_cancels)
    record = Ledger(catalog).get(request_id)
    read = read if read is not None else RequestCells.read(catalog, request_id)
    cells = read.cells
    own = catalog.versions_of_request(request_id)
    replaced_ids = [v.expected_previous_version_id for v in own if v.expected_previous_version_id]
    by_id = {v.version_id: v for v in own}
    if replaced_ids:
        by_id.update({v.version_id: v for v in catalog.versions_by_id(replaced_ids)})

    per_cell: dict[tuple[str, str], list[Version]] = {}
    for v in own:
        per_cell.setdefault((v.asset, v.partition_key), []).append(v)

    overrides = read.overrides
    rolled_back = _purged_rolled_back(catalog, own)
    cell_reports = tuple(
        _cell_report(cell, per_cell.get(cell.key, []), by_id, overrides.get(cell.key, []), facts, rolled_back)
        for cell in cells
    )
    gaps = tuple(ReportGap(v.version_id, v.state, v.gap) for c in cell_reports for v in c.versions if v.gap)
    duplicates = sum(max(sum(1 for v in per_cell.get(c.key, []) if v.published_at) - 1, 0) for c in cells)
    retrying = sum(
        1 for c in cells
        if c.decision == M.SUBMITTED and still_retrying(c, per_cell.get(c.key, []), graph, run_status_of)
    )
    run_ids = sorted({v.dagster_run_id for v in own} | {c.dagster_run_id for c in cells if c.dagster_run_id})
    totals = _totals(cells, cell_reports, len(run_ids), len(own), retrying, duplicates, len(gaps))
    # Done means published: a cell skipped because its upstream or previous day did not publish is not done.
    complete = bool(cell_reports) and all(
        r.decision in M.SUCCESS_CELLS and not cell.left_unpublished for r, cell in zip(cell_reports, cells, strict=True)
    )
    stale, side_effects = affected_downstream_report(catalog, record.request_id, record.spec.downstream, graph)
    return Report(
        request=ReportRequest(record, Pauses(catalog).current([request_id]).get(request_id)),
        totals=totals,
        complete=complete,
        cells=cell_reports,
        gaps=gaps,
        stale_downstream=stale,
        handoffs=tuple(Handoffs(catalog).list(request_id)),
        runs=tuple(ReportRun(r, run_status_of(r) or RunStatus.UNKNOWN, facts.reads_as(r)) for r in run_ids),
        side_effects=side_effects,
    )


def still_retrying(
    cell: Cell, vs: list[Version], graph: AssetGraph, run_status_of: Callable[[str], RunStatus | None]
) -> bool:
    """Whether a submitted cell is being tried again: a later attempt of its logical run is computing (a step
    retry, or a re-execution in another Dagster run), or its latest attempt failed in the cell's run, which goes on
    and has tries left by the asset's own ``retry_policy`` (``max_retries`` 0: never). A first attempt computing is
    in flight, not retrying."""
    if not vs:
        return False
    latest = vs[-1]
    if latest.dagster_run_id != cell.dagster_run_id:
        return True
    if VersionState(latest.state) in IN_PROGRESS:
        return int(latest.attempt_no) > 1
    ended = run_status_of(cell.dagster_run_id) in FINISHED_RUN_STATUSES
    if VersionState(latest.state) != VersionState.ABANDONED or ended:
        return False
    retries = graph[cell.asset].retries if cell.asset in graph else None
    tried = sum(1 for v in vs if v.dagster_run_id == cell.dagster_run_id)
    return retries is not None and retries.has_retries_left(tried)


def _cell_report(
    cell: Cell,
    vs: list[Version],
    by_id: dict[str, Version],
    cell_overrides: list[Override],
    facts: _Facts,
    rolled_back: AbstractSet[str] = frozenset(),
) -> CellReport:
    """One cell's report: its versions with their overrides and gaps, its decision now and its run's status."""
    published = [v for v in vs if v.published_at]
    run_ids = sorted({v.dagster_run_id for v in vs} | ({cell.dagster_run_id} if cell.dagster_run_id else set()))
    decision, reason, override = _decision_now(cell, published, cell_overrides, rolled_back)
    return CellReport(
        asset=cell.asset,
        partition_key=cell.partition_key,
        origin=str(cell.origin),
        decision=decision,
        reason=reason,
        run_ids=tuple(run_ids),
        versions=tuple(_version_report(v, by_id, cell_overrides, facts) for v in vs),
        submitted_at=cell.submitted_at,
        override=override,
        run_status=facts.run_status_of(cell.dagster_run_id) if cell.dagster_run_id else None,
        run_reads_as=facts.reads_as(cell.dagster_run_id) if cell.dagster_run_id else None,
    )


def _totals(
    cells: list[Cell], cell_reports: tuple[CellReport, ...], runs: int, attempts: int, retrying: int, duplicates: int,
    gaps: int,
) -> ReportTotals:
    counts = count_decisions(c.decision for c in cell_reports)
    return ReportTotals(
        planned=sum(1 for c in cells if c.origin == CellOrigin.PLANNED),
        cascaded=sum(1 for c in cells if c.origin == CellOrigin.CASCADE),
        handed_off=sum(1 for c in cells if c.origin == CellOrigin.HANDOFF),
        cells=len(cells),
        runs_created=runs,
        attempts=attempts,
        published=counts[M.PUBLISHED],
        rolled_back=counts[CELL_ROLLED_BACK],
        rejected=counts[M.REJECTED],
        failed=counts[M.FAILED],
        skipped=counts[M.SKIPPED],
        # Decided by a person (backfill-assets accept / reject / skip), also counted above by their decision.
        accepted=_decided_by(cell_reports, OverrideAction.ACCEPT),
        rejected_after_publish=_decided_by(cell_reports, OverrideAction.REJECT),
        marked_skipped=_decided_by(cell_reports, OverrideAction.SKIP),
        cancelled=counts[M.CELL_CANCELLED],
        pending=counts[M.PENDING],
        in_flight=counts[M.SUBMITTED] + counts[M.FOLLOWING],  # following: another run writes it now
        still_retrying=retrying,
        duplicate_publishes=duplicates,
        gaps=gaps,
    )


def decisions_now(catalog: Catalog, request_id: str, cells: list[Cell]) -> list[Cell]:
    """The ledger's cells with each decision as it stands now (``request show`` and ``request list``)."""
    published: dict[tuple[str, str], list[PublishedHead]] = {}
    own = catalog.published_heads_of_request(request_id)  # ids and states: a decision reads nothing else
    for v in own:
        published.setdefault((v.asset, v.partition_key), []).append(v)
    overrides = catalog.overrides_of_cells(c.key for c in cells)
    rolled_back = _purged_rolled_back(catalog, own)
    now = []
    for cell in cells:
        decision, reason, _ = _decision_now(cell, published.get(cell.key, []), overrides.get(cell.key, []),
                                            rolled_back)
        now.append(replace(cell, decision=decision, reason=reason))
    return now


def count_decisions(decisions: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {d: 0 for d in (M.PENDING, *M.IN_PROGRESS_CELLS, CELL_ROLLED_BACK, *M.TERMINAL_CELLS)}
    total = 0
    for decision in decisions:
        counts[decision] = counts.get(decision, 0) + 1
        total += 1
    counts["planned"] = total
    return counts


def _purged_rolled_back(catalog: Catalog, published: Sequence[Version | PublishedHead]) -> set[str]:
    """The purged versions among ``published`` that a rollback had taken off the pointer before gc purged them."""
    purged = [v.version_id for v in published if v.published_at and v.state == VersionState.PURGED.value]
    return catalog.rolled_back_ids(purged) if purged else set()


def _decision_now(
    cell: Cell, published: Sequence[Version | PublishedHead], overrides: list[Override],
    rolled_back: AbstractSet[str] = frozenset(),
) -> tuple[str, str | None, Override | None]:
    """The ledger's decision, corrected by what the cell's published version is now and by a person's override
    (``overrides``: the cell's, oldest first); with the override that decided it. ``rolled_back``: purged
    versions a rollback had taken off the pointer (gc purges what a rollback left, and the version's state then
    says PURGED; the publish log still says why it stopped serving)."""
    if cell.decision == M.SKIPPED and cell.skip_kind == SkipKind.MARKED:
        marks = [o for o in overrides if o.action is OverrideAction.SKIP]
        return cell.decision, cell.reason, marks[-1] if marks else None
    if not published or cell.decision not in (M.PUBLISHED, M.REJECTED, M.FAILED):
        return cell.decision, cell.reason, None
    latest = published[-1]
    state = VersionState(latest.state)
    decided = [o for o in overrides if o.version_id == latest.version_id]
    last = decided[-1] if decided else None
    accepted = last is not None and last.action is OverrideAction.ACCEPT
    rejected = last is not None and last.action is OverrideAction.REJECT
    if state is VersionState.PURGED and latest.version_id in rolled_back and not rejected:
        # Published by this request, rolled back, then purged: a cell whose run settled after the purge reads
        # "failed (run success, version PURGED)" in the ledger; what happened to it is the rollback.
        return CELL_ROLLED_BACK, f"its version {latest.version_id} was rolled back (its files purged since)", None
    if cell.decision == M.FAILED:
        return cell.decision, cell.reason, None
    if state is VersionState.ROLLED_BACK and (cell.decision == M.PUBLISHED or accepted):
        return CELL_ROLLED_BACK, f"its version {latest.version_id} was rolled back", None
    if last is not None and rejected and state is VersionState.REJECTED:
        return M.REJECTED, f"its version {latest.version_id} was {last.summary}", last
    if last is not None and accepted and cell.decision == M.REJECTED:
        # Published on a person's word: the request's output for the cell serves (or served until superseded).
        return M.PUBLISHED, f"its rejected version {latest.version_id} was {last.summary}", last
    return cell.decision, cell.reason, None


def _decided_by(cells: tuple[CellReport, ...], action: OverrideAction) -> int:
    return sum(1 for c in cells if c.override and c.override.action is action)


def _gap(
    version: Version,
    run_status_of: Callable[[str], RunStatus | None],
    materialized: set[str] | None,
    warehouse: Warehouse | None,
) -> str | None:
    state = member(VersionState, version.state)
    if state in IN_PROGRESS and run_status_of(version.dagster_run_id) in (*FINISHED_RUN_STATUSES, None):
        return GAP_STUCK.format(state=state.value)
    if version.published_at and materialized is not None and version.version_id not in materialized:
        return GAP_NO_MATERIALIZATION
    if warehouse is not None and state is VersionState.PUBLISHED:
        try:
            warehouse.verify_version(version)  # its manifest and its data file, as every reader checks them
        except ManifestMismatch as exc:
            return GAP_MANIFEST.format(error=str(exc))
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a finding, not a crash
            return GAP_FILE.format(error=str(exc))
    return None
