"""What reconcile reports (docs/ARCHITECTURE.md#reconcile-rollback-gc): the records of a request's reconciliation,
per version, per cell and in totals, and the words its gaps and decisions use. ``reconcile.py`` builds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.model.states import RunStatus, VersionState
from backfill_assets.engine.plan.reconcile_downstream import SideEffectCell, StaleCell
from backfill_assets.engine.store.handoffs import Handoff
from backfill_assets.engine.store.ledger import RequestRecord
from backfill_assets.engine.store.pauses import Pause

# A cell whose published version was later moved off the pointer by a rollback: the request's output for that
# cell is not serving, so it is neither ``published`` nor complete (a ledger decision never says this; the
# version's state does).
CELL_ROLLED_BACK = M.CellDecision.ROLLED_BACK
# recomputed_on_current_upstream when the cell reads a source that could not be fingerprinted: no honest yes/no.
NOT_REPRODUCIBLE = "not reproducible"
GAP_NO_MATERIALIZATION = "published in the catalog without a Dagster materialization"
GAP_STUCK = "stuck in {state} but its run has ended"
GAP_FILE = "data file does not match the catalog: {error}"
GAP_MANIFEST = "manifest does not match the catalog: {error}"
# How reconcile reads a run that was marked cancelled without its worker's confirmation (``request cancel`` with a
# code server that did not answer, Dagster's own force termination): Dagster may show it FAILURE (the worker's job
# failure came after the mark), which is the cancel's doing, not a failed computation.
FORCED_CANCEL = "cancelled (forced)"


@dataclass(frozen=True)
class VersionReport(JsonRecord):
    """One version of a cell as reconcile reads it: the catalog's row, what changed from the version it replaced,
    a person's overrides of it and the gap found in it."""

    version_id: str
    state: VersionState
    logical_run_id: str
    dagster_run_id: str
    attempt_no: int
    interval_start: str
    interval_end: str
    requested_at: str | None
    started_at: str | None
    ended_at: str | None
    published_at: str | None
    code_version: str
    params_digest: str
    rows: int | None
    sha256: str | None
    input_versions: Mapping[str, str] | None
    checks: Sequence[Mapping[str, Any]] | None
    error: str | None
    replaced_version_id: str | None
    change: Mapping[str, Any] | None
    recomputed_on_current_upstream: bool | str | None  # True / False / NOT_REPRODUCIBLE; None: nothing replaced
    source_fingerprint: str | None = None
    gap: str | None = None  # GAP_STUCK, GAP_NO_MATERIALIZATION, GAP_FILE or GAP_MANIFEST, filled in
    worker: str | None = None  # the process that wrote the attempt: which worker ran which day
    # A person's accept / reject of this version, oldest first.
    overrides: tuple[Override, ...] = ()
    # What params_digest digests: the injected defect and, for an asset with a config, that config (defaults
    # included); None for a version written before the catalog kept them.
    params: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class CellReport(JsonRecord):
    """One cell of the request: its decision now, its runs and versions, and the override that decided it."""

    asset: str
    partition_key: str
    origin: str  # a CellOrigin value
    decision: str  # the ledger's decision, except CELL_ROLLED_BACK when its published version was rolled back
    reason: str | None
    run_ids: tuple[str, ...]
    versions: tuple[VersionReport, ...]
    submitted_at: str | None = None  # when the driver created the cell's (latest) run
    # The person's override that decides the cell now: an accept or reject of its version, or its skip mark.
    override: Override | None = None
    run_status: RunStatus | None = None  # Dagster's status of the cell's (latest) run
    # FORCED_CANCEL when that run was marked cancelled without its worker's confirmation, whatever Dagster shows
    run_reads_as: str | None = None


@dataclass(frozen=True)
class ReportRequest:
    """The request as the ledger holds it, and its pause while it is paused. Its JSON is the ledger's row (the
    frozen spec's lists decoded) with ``pause`` beside it."""

    record: RequestRecord
    pause: Pause | None = None  # who paused it, when, why (None when it is not paused)

    @property
    def request_id(self) -> str:
        return self.record.request_id

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def spec(self) -> M.RequestSpec:
        return self.record.spec

    def as_dict(self) -> dict[str, Any]:
        return {**self.record.as_dict(), "pause": self.pause.as_dict() if self.pause else None}


@dataclass(frozen=True)
class ReportGap(JsonRecord):
    """A disagreement between the catalog and Dagster (or a published file): which version, and what is wrong."""

    version_id: str
    state: VersionState
    gap: str  # GAP_STUCK, GAP_NO_MATERIALIZATION, GAP_FILE or GAP_MANIFEST, filled in


@dataclass(frozen=True)
class ReportRun(JsonRecord):
    """One Dagster run of the request as reconcile reads it."""

    run_id: str
    status: RunStatus  # Dagster's run status, UNKNOWN when Dagster has no record of the run
    reads_as: str | None  # FORCED_CANCEL when it was marked cancelled without its worker's confirmation


@dataclass(frozen=True)
class ReportTotals(JsonRecord):
    """A request's counts: its cells by origin and by decision now, its runs and attempts, and what went wrong.
    ``accepted``, ``rejected_after_publish`` and ``marked_skipped`` (a person's decision) are also counted under
    the decision they led to; ``in_flight`` counts following cells too (another run writes them now)."""

    planned: int
    cascaded: int
    handed_off: int
    cells: int
    runs_created: int
    attempts: int
    published: int
    rolled_back: int
    rejected: int
    failed: int
    skipped: int
    accepted: int
    rejected_after_publish: int
    marked_skipped: int
    cancelled: int
    pending: int
    in_flight: int
    still_retrying: int
    duplicate_publishes: int
    gaps: int


@dataclass(frozen=True)
class Report(JsonRecord):
    """A request's reconciliation: per cell, and in totals, what was planned, created, published and the rest."""

    request: ReportRequest
    totals: ReportTotals
    complete: bool
    cells: tuple[CellReport, ...]
    gaps: tuple[ReportGap, ...]
    # Policy none: downstream data cells whose serving version did not read what the request published.
    stale_downstream: tuple[StaleCell, ...]
    handoffs: tuple[Handoff, ...]
    # Side-effect cells affected by the request's publishes (policy none): their state is their outbox deliveries.
    side_effects: tuple[SideEffectCell, ...] = ()
    runs: tuple[ReportRun, ...] = ()
