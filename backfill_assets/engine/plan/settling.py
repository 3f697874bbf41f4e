"""How a run's end settles the cells it was writing, and how a request whose cells have all ended closes — pure
functions shared by the driver's tick, the adoption of a Dagster backfill and cancel."""

from __future__ import annotations

from dataclasses import dataclass

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellUpdate, SkipKind
from backfill_assets.engine.model.states import FINISHED_RUN_STATUSES, VERIFIED, RunStatus, VersionState

# How much of its version's error a failed cell's reason carries (the whole error stays on the version).
FAILED_REASON_CHARS = 500


@dataclass(frozen=True)
class RunView:
    run_id: str
    run_key: str | None
    partition: str | None
    status: RunStatus
    slot: int | None = None


@dataclass(frozen=True)
class Settled:
    """A submitted cell's terminal decision (or, to resubmit it, pending again) once its run has finished."""

    decision: M.CellDecision
    reason: str | None
    dagster_run_id: str | None
    skip_kind: SkipKind | None = None  # a skip's kind

    def of(self, cell: Cell) -> CellUpdate:
        kind = {"skip_kind": self.skip_kind} if self.skip_kind else {}
        return cell.change(decision=self.decision, reason=self.reason, dagster_run_id=self.dagster_run_id, **kind)


def settle(
    run: RunView | None, version_state: str | None, side_effect: bool = False, version_error: str | None = None
) -> Settled | None:
    """The terminal decision of a submitted cell once its run has finished, or None while it has not.
    ``side_effect``: the cell's asset is a side effect (no version: a successful run is its delivery);
    ``version_error``: why its version ended as it did (a failed cell's reason says so)."""
    if run is None or run.status not in FINISHED_RUN_STATUSES:
        return None
    state = VersionState(version_state) if version_state else None
    if state in VERIFIED:
        return Settled(M.PUBLISHED, None, run.run_id)
    if state is VersionState.REJECTED:
        return Settled(M.REJECTED, "blocking check failed or publish refused", run.run_id)
    if run.status == RunStatus.CANCELED:
        return Settled(M.CELL_CANCELLED, "run cancelled", run.run_id)
    if run.status == RunStatus.SUCCESS and side_effect:
        return Settled(M.PUBLISHED, "side effect delivered", run.run_id)
    reason = f"run {run.status.lower()}" + (f", version {state.value}" if state else ", no version written")
    if state and version_error:
        reason += f": {version_error[:FAILED_REASON_CHARS]}"
    return Settled(M.FAILED, reason, run.run_id)


def closing_status(cells: list[Cell]) -> tuple[M.RequestStatus, str]:
    """How a request whose cells are all terminal closes: completed when every cell is published or deliberately
    skipped (already published, the policy, a person's mark), failed otherwise — "done" means published."""
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.decision] = counts.get(c.decision, 0) + 1
    summary = ", ".join(f"{n} {d}" for d, n in sorted(counts.items()))
    done = all(c.decision == M.PUBLISHED or (c.decision == M.SKIPPED and not c.left_unpublished) for c in cells)
    return (M.COMPLETED, summary) if done else (M.REQUEST_FAILED, summary)


def followed_outcome(
    run: RunView | None, followed_run_id: str, version_state: str | None, side_effect: bool = False,
    version_error: str | None = None,
) -> Settled | None:
    """What a following cell becomes once the run it follows has ended (None while it has not): that run's outcome,
    naming it; or pending again, to be decided afresh, when that run was cancelled or no longer exists (deleted
    from Dagster): nothing wrote the day, so the request may run it."""
    if run is None:
        return Settled(M.PENDING, f"run {followed_run_id[:8]} it followed no longer exists; decided again", None)
    settled = settle(run, version_state, side_effect, version_error)
    if settled is None:
        return None
    if settled.decision == M.CELL_CANCELLED:
        return Settled(M.PENDING, f"run {run.run_id[:8]} it followed was cancelled; decided again", None)
    followed = f"followed run {run.run_id[:8]}"
    return Settled(settled.decision, f"{followed}: {settled.reason}" if settled.reason else followed, run.run_id)
