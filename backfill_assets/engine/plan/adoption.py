"""Adopting a backfill launched from the Dagster UI or CLI into the ledger, and tracking its cells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Cell, CellOrigin, CellUpdate, Skip, SkipKind
from backfill_assets.engine.model.day_order import DayOrder, declared_pace
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.states import FINISHED_RUN_STATUSES
from backfill_assets.engine.plan.admission import launch_policy
from backfill_assets.engine.plan.settling import (
    RunView,
    closing_status,
    followed_outcome,
    settle,
)

# What an adopted request records as max_active on an instance whose run coordinator does not pace Dagster's
# backfills (not ours): nothing limits them but the queue's own limits.
UNPACED_MAX_ACTIVE = 64
# The pacing tags only the run coordinator applies (``integration/runs/coordinator.py``).
PACING_TAGS = (T.MAX_ACTIVE, T.ORDER)


def unpaced_note(tags: dict[str, str]) -> str:
    """The adopted request's message on an instance whose run coordinator does not pace Dagster's backfills: its
    runs are queued as Dagster queues them, without the slot, lane and team tags the queue's limits count, so the
    limits a paced backfill would state do not hold, and a pacing tag it carries is not applied (said, not silent)."""
    ignored = [f"{tag}={tags[tag]}" for tag in PACING_TAGS if tags.get(tag)]
    return (
        "not paced: the instance's run coordinator is not BackfillRunCoordinator, so Dagster queues this backfill's "
        "runs as they come, outside the backfill lane and team limits"
        + (f"; its tag(s) {', '.join(ignored)} are not applied" if ignored else "")
    )


@dataclass(frozen=True)
class AdoptedRun:
    view: RunView
    assets: tuple[str, ...]


def adopted_spec(
    graph: AssetGraph,
    cells: tuple[tuple[str, str], ...],
    tags: dict[str, str],
    user: str | None,
    default_max_active: int | None,
    system_user: str | None = None,
) -> M.RequestSpec:
    """The request an adopted backfill amounts to; its tags may carry our policies.

    ``default_max_active``: the run coordinator's default pacing (``integration/runs/coordinator.py``), None when
    the instance's coordinator does not pace Dagster's backfills. ``system_user``: who Dagster says launched it."""
    assets = tuple(graph.topological({a for a, _ in cells if a in graph}))
    partitions = tuple(sorted({p for _, p in cells}))
    default = default_max_active or UNPACED_MAX_ACTIVE
    try:
        policy = launch_policy(tags, default)
    except InvalidInput:
        # Its steps refuse the bad tag, naming it; the record keeps the defaults.
        policy = launch_policy({}, default)
    # Order and pace the backfill's tags leave out are what its assets declare (a tag contradicting them is
    # refused by each step's admission check, naming the asset).
    pace = declared_pace(graph, assets, refuse_conflict=False)
    paced = default_max_active is not None
    # A side effect named in the tags may be outside the selection: the cascade reaches it.
    side_effects = tuple(a for a in policy.allow_side_effects if a in graph and graph[a].side_effect)
    return M.RequestSpec(
        assets=assets,
        partitions=partitions,
        reprocess=policy.reprocess,
        max_active=_max_active(tags, policy.max_active, bool(pace.serial)) if paced else UNPACED_MAX_ACTIVE,
        order=(policy.order if tags.get(T.ORDER) else (pace.order or DayOrder.FORWARD).value)
        if paced else M.Order.FORWARD,
        serial=bool(pace.serial) and paced,
        # Dagster's daemon runs the backfill's own cells; cascaded and handed-off cells are the driver's
        # (``driven_cells``), as in a request made with the CLI.
        downstream=policy.downstream,
        confirm_cascade=policy.confirm_cascade,
        allow_side_effects=side_effects,
        approved_by=policy.approved_by,
        reason=tags.get(T.REASON, "launched from Dagster"),
        requested_by=tags.get(T.REQUESTED_BY) or user or "dagster",
        system_user=system_user,
    )


def _max_active(tags: dict[str, str], from_policy: int, serial: bool) -> int:
    """The tag's max_active, else 1 for assets whose days run one at a time, else the coordinator's default."""
    return from_policy if tags.get(T.MAX_ACTIVE) or not serial else 1


def driven_cells(cells: list[Cell]) -> list[Cell]:
    """The cells of an adopted backfill that the driver runs: those its downstream policy added (cascaded, or
    accepted in a handoff). Dagster's daemon runs the rest, the backfill's own selection."""
    return [c for c in cells if c.origin != CellOrigin.PLANNED]


def awaiting_confirmation(
    request_id: str, spec: M.RequestSpec, confirmed: bool, cells: list[Cell]
) -> tuple[str, str] | None:
    """The open status saying cascaded cells wait for ``request confirm`` (``backfill/downstream=confirm``)."""
    if not spec.confirm_cascade or confirmed:
        return None
    waiting = sum(1 for c in driven_cells(cells) if c.decision == M.PENDING)
    return (M.OPEN, f"{waiting} cascaded cell(s) wait for `request confirm {request_id}`") if waiting else None


def track_adopted(
    graph: AssetGraph,
    cells: list[Cell],
    runs: list[AdoptedRun],
    version_state_of: Callable[[str, str, str], str | None],
    backfill_done: bool,
    backfill_cancelled: bool,
    skip_of: Callable[[str, str, str], Skip | None] = lambda asset, partition, run_id: None,
    hold_open: str | None = None,
    followed_runs: dict[str, RunView] | None = None,
) -> tuple[list[CellUpdate], tuple[str, str] | None]:
    """Cell updates from the backfill's runs; the request closes once Dagster's backfill is done and so is every
    cell its downstream policy added (the driver's), unless ``hold_open`` says why not yet.

    ``skip_of(asset, partition, dagster_run_id)``: why the step's admission check left the cell alone, if it did
    (``engine/plan/admission.py``). The cell is then ``skipped`` with that reason, and so is a cell of the same
    run downstream of it, whose step Dagster skipped because its upstream output was not produced. A cell left
    alone because another run had it in flight **follows** that run instead, and takes its outcome once it ends
    (``followed_runs``: those runs by id; one absent no longer exists)."""
    latest: dict[tuple[str, str], AdoptedRun] = {}
    for adopted in sorted(runs, key=lambda r: r.view.run_id):
        for asset in adopted.assets:
            latest[(asset, adopted.view.partition or "")] = adopted
    tracking = _Tracking(graph, version_state_of, skip_of, followed_runs or {}, backfill_done, backfill_cancelled)
    updates = [u for u in (tracking.update(cell, latest.get(cell.key)) for cell in cells) if u is not None]
    # Each update has been applied to its cell (Cell.change): the cells are as the ledger will hold them.
    return updates, _adopted_status(cells, backfill_done, backfill_cancelled, hold_open)


@dataclass(frozen=True)
class _Tracking:
    graph: AssetGraph
    version_state_of: Callable[[str, str, str], str | None]
    skip_of: Callable[[str, str, str], Skip | None]
    followed_runs: dict[str, RunView]
    backfill_done: bool
    backfill_cancelled: bool

    def update(self, cell: Cell, run: AdoptedRun | None) -> CellUpdate | None:
        """The cell's update now (None: unchanged), from the backfill's latest run of it."""
        if cell.decision in M.TERMINAL_CELLS:
            return None
        stopped = self.backfill_cancelled and cell.decision in (M.PENDING, M.FOLLOWING)
        if stopped and (cell.origin != CellOrigin.PLANNED or cell.decision == M.FOLLOWING):
            # A followed run is another requester's: it goes on, this request no longer waits for it.
            return cell.change(decision=M.CELL_CANCELLED, reason="backfill cancelled before it ran")
        if cell.origin != CellOrigin.PLANNED:
            return None  # the driver's (driven_cells)
        if cell.decision == M.FOLLOWING:
            return self._followed(cell)
        if run is None:
            if not self.backfill_done:
                return None
            if self.backfill_cancelled:
                return cell.change(decision=M.CELL_CANCELLED, reason="backfill cancelled before it ran")
            return cell.skip("not run by the backfill", SkipKind.DECIDED)
        state = self.version_state_of(cell.asset, cell.partition_key, run.view.run_id)
        left_alone = _left_alone(self.graph, cell, run, state, self.skip_of)
        if left_alone is not None and left_alone.followed_run_id:
            return cell.change(decision=M.FOLLOWING, reason=left_alone.reason,
                               dagster_run_id=left_alone.followed_run_id)
        if left_alone is not None:
            return cell.skip(left_alone.reason, left_alone.kind, dagster_run_id=run.view.run_id)
        settled = settle(run.view, state, self.graph[cell.asset].side_effect)
        if settled:
            return settled.of(cell)
        if cell.decision != M.SUBMITTED:
            return cell.change(decision=M.SUBMITTED, dagster_run_id=run.view.run_id)
        return None

    def _followed(self, cell: Cell) -> CellUpdate | None:
        followed_id = cell.dagster_run_id or ""
        run = self.followed_runs.get(followed_id)
        state = self.version_state_of(cell.asset, cell.partition_key, run.run_id) if run else None
        settled = followed_outcome(run, followed_id, state, self.graph[cell.asset].side_effect)
        if settled is None:
            return None
        if settled.decision == M.PENDING:
            # Dagster's backfill is past this cell: nothing of this request will write the day.
            return cell.skip(f"run {followed_id[:8]} it followed ended without writing the day (cancelled or "
                             "deleted); not published", SkipKind.LEFT_UNPUBLISHED, dagster_run_id=followed_id)
        return settled.of(cell)


def _adopted_status(
    cells: list[Cell], backfill_done: bool, backfill_cancelled: bool, hold_open: str | None
) -> tuple[str, str] | None:
    unfinished = [c for c in cells if c.decision not in M.TERMINAL_CELLS]
    if not backfill_done or any(c.origin == CellOrigin.PLANNED for c in unfinished):
        return None
    if unfinished:
        return (M.OPEN, f"Dagster backfill finished; {len(unfinished)} cell(s) its downstream policy added still "
                        "to settle")
    if backfill_cancelled:
        return (M.CANCELLED, "Dagster backfill cancelled")
    if hold_open:
        return (M.OPEN, f"Dagster backfill finished; {hold_open}")
    status, summary = closing_status(cells)
    return (status, f"Dagster backfill finished: {summary}")


def _left_alone(
    graph: AssetGraph,
    cell: Cell,
    run: AdoptedRun,
    version_state: str | None,
    skip_of: Callable[[str, str, str], Skip | None],
) -> Skip | None:
    """Why the finished run left the cell alone: its own admission check, or an upstream cell of the same run
    that was left alone (Dagster skips the downstream step), or None."""
    if run.view.status not in FINISHED_RUN_STATUSES or version_state is not None:
        return None
    own = skip_of(cell.asset, cell.partition_key, run.view.run_id)
    if own is not None:
        return own
    pending = list(graph[cell.asset].upstream)
    seen: set[str] = set()
    while pending:
        upstream = pending.pop()
        if upstream in seen or upstream not in run.assets:
            continue
        seen.add(upstream)
        why = skip_of(upstream, cell.partition_key, run.view.run_id)
        if why is not None and why.followed_run_id:
            # The upstream day is another run's to write: this one was never computed from it.
            return Skip(f"upstream {upstream} was in flight in run {why.followed_run_id[:8]}, so this run left "
                        "it alone; not computed", SkipKind.LEFT_UNPUBLISHED)
        if why is not None:
            # Left alone by Dagster, which skipped the step: nothing of this request failed to publish.
            return Skip(f"upstream {upstream} was left alone in this run ({why.reason})")
        pending.extend(graph[upstream].upstream)
    return None
