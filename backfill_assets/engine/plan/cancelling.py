"""How a cancelled request's submitted cells end, once its runs have been stopped (``request cancel``)."""

from __future__ import annotations

from dataclasses import dataclass

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellUpdate
from backfill_assets.engine.model.states import RunStatus
from backfill_assets.engine.plan.settling import RunView, settle


@dataclass(frozen=True)
class StoppedRuns:
    """What the cancel did to the request's runs."""

    # Run ids it stopped: queued runs it took out of the queue, running ones whose termination Dagster accepted,
    # and those it marked cancelled itself (``forced``).
    ids: frozenset[str]
    forced: dict[str, str]  # run id -> why it marked the run cancelled without its worker's confirmation


def cancelled_cell(
    cell: Cell, run: RunView | None, version_state: str | None, stopped: StoppedRuns, side_effect: bool = False
) -> CellUpdate:
    """The terminal decision of a submitted cell of a cancelled request.

    ``cancelled`` when its run was stopped, never created or is still stopping; otherwise the outcome of its run
    when that run finished on its own before the cancel reached it (published, rejected, failed). A run the cancel
    stopped can still end FAILURE in Dagster: a run marked cancelled without its worker's confirmation, whose step
    then fails on the interruption, gets Dagster's job failure event after the fact (Dagster writes a cancellation
    only while the run is CANCELING). That failure is the cancel's doing, and the cell says cancelled.
    """
    if run is None:
        reason = "request cancelled before its run was created"
        return cell.change(decision=M.CELL_CANCELLED, reason=reason, dagster_run_id=None)
    outcome = settle(run, version_state, side_effect)
    if outcome is None:
        return cell.change(decision=M.CELL_CANCELLED, reason="run still stopping", dagster_run_id=run.run_id)
    stopped_it = run.run_id in stopped.ids  # forced runs included
    if outcome.decision == M.CELL_CANCELLED or (outcome.decision == M.FAILED and stopped_it):
        why = stopped.forced.get(run.run_id)
        reason = f"run marked cancelled: {why}" if why else "run terminated: request cancelled"
        if run.status != RunStatus.CANCELED:
            reason += f" (Dagster then ended the run {run.status})"
        return cell.change(decision=M.CELL_CANCELLED, reason=reason, dagster_run_id=run.run_id)
    return outcome.of(cell)
