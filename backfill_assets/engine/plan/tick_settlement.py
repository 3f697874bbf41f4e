"""The driver tick's first step: the cells whose runs have ended, settled (published, rejected, failed, skipped
after their chain's first unpublished day, or back to pending when their run failed before writing anything),
and the cells following another requester's run given that run's outcome. Pure functions of the facts given."""

from __future__ import annotations

from typing import Callable

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import PREVIOUS_NOT_PUBLISHED, Cell, CellUpdate, SkipKind
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.states import RunStatus
from backfill_assets.engine.plan.settling import RunView, Settled, followed_outcome, settle
from backfill_assets.engine.store.request_record import RequestRecord

# A cell whose run failed before writing anything is resubmitted at most this many times (new run keys).
MAX_RELAUNCHES = 2
# Statuses under which a cell whose run failed before writing goes back to pending rather than failing: a pause
# must not turn a cell its resume would retry into a failed one.
RELAUNCHING = (M.OPEN, M.PAUSED)


def settle_finished(
    graph: AssetGraph,
    record: RequestRecord,
    cells: list[Cell],
    runs_by_key: dict[str, RunView],
    version_state_of: Callable[[str, str, str], str | None],
    updates: list[CellUpdate],
    version_error_of: Callable[[str, str, str], str | None] | None = None,
) -> set[tuple[str, str]]:
    """Settle the submitted cells whose runs have finished (their updates appended to ``updates``); returns the
    cells going back to pending to be resubmitted (their run failed before writing them).

    A depends-on-past asset's run stops at its first day that does not publish: the later days it did not
    attempt are skipped naming their previous day, never resubmitted in this request (Airflow's depends_on_past).
    Days are visited in order so that the first day that did not publish is known before the later ones."""
    relaunch: set[tuple[str, str]] = set()
    cut_short: set[tuple[str | None, str]] = set()  # (run key, asset) of chains a day did not publish in
    submitted = sorted((c for c in cells if c.decision == M.SUBMITTED), key=lambda c: (c.asset, c.partition_key))
    for cell in submitted:
        run = runs_by_key.get(cell.run_key) if cell.run_key is not None else None
        if run is not None and not cell.dagster_run_id:
            updates.append(cell.change(dagster_run_id=run.run_id))
        state = version_state_of(cell.asset, cell.partition_key, run.run_id) if run else None
        side_effect = graph[cell.asset].side_effect
        error = version_error_of(cell.asset, cell.partition_key, run.run_id) if run and version_error_of else None
        settled = settle(run, state, side_effect, error)
        chain = (cell.run_key, cell.asset)
        if settled is None or run is None:  # settle() settles only a finished run
            continue
        if chain in cut_short and state is None and run.status == RunStatus.FAILURE:
            previous = graph.calendar.previous_key(cell.partition_key)
            settled = Settled(M.SKIPPED, PREVIOUS_NOT_PUBLISHED.format(previous), run.run_id, SkipKind.LEFT_UNPUBLISHED)
        elif record.status in RELAUNCHING and not side_effect and failed_before_writing(cell, run, state):
            # Nothing of this cell was written (e.g. Dagster could not launch the run while its storage was
            # restarting): resubmit it under the next round's run key, decided afresh on the next tick (for a
            # paused request, the first tick after its resume).
            settled = Settled(M.PENDING, f"run {run.run_id[:8]} failed before writing; resubmitting", None)
            relaunch.add(cell.key)
        if graph[cell.asset].depends_on_past and settled.decision not in M.SUCCESS_CELLS + (M.PENDING,):
            cut_short.add(chain)
        updates.append(settled.of(cell))
    return relaunch


def settle_followed(
    graph: AssetGraph,
    cells: list[Cell],
    followed_runs: dict[str, RunView],
    version_state_of: Callable[[str, str, str], str | None],
    updates: list[CellUpdate],
    version_error_of: Callable[[str, str, str], str | None] | None = None,
) -> set[tuple[str, str]]:
    """Settle the following cells whose run has ended (``settling.followed_outcome``; their updates appended to
    ``updates``); returns those set pending again, to be decided on the next tick."""
    again: set[tuple[str, str]] = set()
    for cell in cells:
        if cell.decision != M.FOLLOWING or not cell.dagster_run_id:
            continue
        run = followed_runs.get(cell.dagster_run_id)
        state = version_state_of(cell.asset, cell.partition_key, run.run_id) if run else None
        error = version_error_of(cell.asset, cell.partition_key, run.run_id) if run and version_error_of else None
        settled = followed_outcome(run, cell.dagster_run_id, state, graph[cell.asset].side_effect, error)
        if settled is None:
            continue
        updates.append(settled.of(cell))
        if settled.decision == M.PENDING:
            again.add(cell.key)
    return again


def failed_before_writing(cell: Cell, run: RunView | None, version_state: str | None) -> bool:
    """A failed run that wrote no version of the cell, within the relaunch budget."""
    if run is None or run.status != RunStatus.FAILURE or version_state is not None:
        return False
    try:
        round_no = int(str(cell.run_key).rsplit("/", 1)[-1])
    except ValueError:
        return False
    return round_no <= MAX_RELAUNCHES
