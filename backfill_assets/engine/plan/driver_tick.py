"""One evaluation of the backfill driver for one request, as a pure function of the facts it is given.

The Dagster sensor gathers the facts (runs, versions, in-flight cells), calls ``tick``, writes the cell updates
to the ledger and turns the submissions into run requests with idempotent run keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellOrigin, CellUpdate, SkipKind
from backfill_assets.engine.model.code_inputs import changed_parts
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.plan.chunking import (
    BATCH,
    CHAIN,
    adjacent,
    chain_chunks,
    chunk_size,
    contiguous_chunks,
    pending_groups,
)
from backfill_assets.engine.plan.planning import CREATE, FOLLOW, CellFacts, Decision, decide, run_key
from backfill_assets.engine.plan.readiness import chain_readiness, readiness
from backfill_assets.engine.plan.settling import RunView, closing_status
from backfill_assets.engine.plan.tick_settlement import settle_finished, settle_followed
from backfill_assets.engine.store.request_record import RequestRecord

# With queue-ahead, runs waiting in the queue behind each running run of a request.
QUEUED_PER_SLOT = 1
# A submitted cell whose run does not exist yet is requested again only once its submission is this old (or older
# than the daemon now driving): until then the driver that recorded it may still be creating its run, and a second
# driver asking for the same run key then would make a second run of it.
REREQUEST_GRACE_SECONDS = 20.0


@dataclass(frozen=True)
class Submission:
    """One run: ``assets`` over ``partitions`` (one partition, or up to K consecutive ones for a batched run)."""

    partitions: tuple[str, ...]
    assets: tuple[str, ...]
    run_key: str
    cells: tuple[tuple[str, str], ...] = ()  # (asset, partition) written by the run
    slot: int | None = None  # run slot when the instance enforces one run per slot (queue-ahead)
    # asset -> its own config frozen in the request (only assets the request configured)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)

    def days_by_asset(self, graph: AssetGraph) -> dict[str, list[str]]:
        days: dict[str, list[str]] = {}
        for asset, partition in sorted(self.cells, key=lambda c: (graph.order_of(c[0]), c[1])):
            days.setdefault(asset, []).append(partition)
        return days

    @property
    def partition(self) -> str:
        return self.partitions[0]

    @property
    def batched(self) -> bool:
        return len(self.partitions) > 1


@dataclass
class TickResult:
    submissions: list[Submission] = field(default_factory=list)
    cell_updates: list[CellUpdate] = field(default_factory=list)
    status: tuple[str, str | None] | None = None


def code_version_block(frozen: str, loaded: str) -> str:
    """Why a request whose code changed under it submits nothing more (its runs' versions would be refused), with
    which part changed when the versions say (engine/model/code_inputs.changed_parts)."""
    parts = changed_parts(frozen, loaded)
    what = f": {', '.join(parts)} changed" if parts else ""
    return (f"blocked: code version changed (frozen {frozen}, loaded {loaded}){what} — cancel it and create a new "
            "request")


def tick(
    graph: AssetGraph,
    record: RequestRecord,
    cells: list[Cell],
    runs_by_key: dict[str, RunView],
    version_state_of: Callable[[str, str, str], str | None],
    facts_of: Callable[[str, str], CellFacts],
    loaded_code_version: str,
    cascade_confirmed: bool = True,
    hold_open: str | None = None,
    queue_ahead: bool = False,
    version_error_of: Callable[[str, str, str], str | None] | None = None,
    rerequest_before: str | None = None,
    followed_runs: dict[str, RunView] | None = None,
) -> TickResult:
    """``cascade_confirmed`` False keeps cascaded cells waiting for ``request confirm``; ``hold_open`` names why
    the request may not close yet even if every cell is terminal (publishes not yet propagated, open handoffs).

    ``queue_ahead``: the instance runs one run per slot tag at a time, so each of the request's ``max_active``
    slots may hold a running run and one queued behind it; the queue starts the next run as soon as a slot
    frees, instead of the driver's next tick (Dagster's sensor loop: every 5 s at best).

    ``version_error_of(asset, partition, dagster_run_id)``: the error its version ended with, for the reason of a
    failed cell (e.g. a step not delivered again after its workers died).

    ``rerequest_before``: a submitted cell whose run does not exist yet is requested again only if it was
    submitted before this time (an ISO timestamp; None: whenever it was).

    ``followed_runs``: the runs, by id, that following cells wait for (runs of other requests or of production)."""
    result = TickResult()
    spec = record.spec
    # Copies of the cells the tick may change as it decides (pending, submitted, following); a terminal cell is
    # only read, so a request's thousands of finished cells are not copied on every tick.
    cells = [c if c.decision in M.TERMINAL_CELLS else replace(c) for c in cells]

    # 1. Settle submitted cells whose runs have finished.
    relaunch = settle_finished(graph, record, cells, runs_by_key, version_state_of, result.cell_updates,
                               version_error_of)
    # Cells set pending again are decided on the next tick: one tick writes a cell once (the ledger compares each
    # write with what the tick read).
    relaunch |= settle_followed(graph, cells, followed_runs or {}, version_state_of, result.cell_updates,
                                version_error_of)

    # A cell the driver submitted has its run key (an adopted backfill's own cells, submitted without one, are
    # Dagster's: adoption.driven_cells leaves them out).
    in_flight = {c.run_key for c in cells if c.decision == M.SUBMITTED and c.run_key is not None}
    # Submitted cells whose run does not exist yet are re-requested under the same run key: Dagster launches
    # a run key once per sensor, so a tick that died after recording them cannot lose or duplicate them.
    # A paused request launches nothing, these included: they are re-requested after its resume.
    if record.status != M.PAUSED:
        result.submissions.extend(_resubmissions(spec, cells, runs_by_key, rerequest_before))

    # 2. Stop on a code version change, before submitting anything new.
    if record.code_version != loaded_code_version and record.status in (M.OPEN, M.BLOCKED):
        result.status = (M.BLOCKED, code_version_block(record.code_version, loaded_code_version))
        return result
    if record.status != M.OPEN:
        return result  # waiting, blocked or paused: nothing new is submitted, and the request does not close

    # 3. Submit pending cells in order, up to max_active runs in flight (twice that when queuing ahead).
    slots = _Slots.of(record, cells, runs_by_key, in_flight, queue_ahead)
    eligible = [c for c in cells if c.key not in relaunch]
    awaiting_confirmation = _submit_pending(
        graph, record, cells, eligible, facts_of, cascade_confirmed, slots, result
    )

    # 4. Close the request when every cell is terminal and nothing downstream is still to be decided.
    if awaiting_confirmation:
        result.status = (
            M.OPEN, f"{awaiting_confirmation} cascaded cell(s) wait for `request confirm {record.request_id}`"
        )
    elif all(c.decision in M.TERMINAL_CELLS for c in cells):
        if hold_open:
            result.status = (M.OPEN, hold_open)
        else:
            result.status = closing_status(cells)
    return result


def _follow(cell: Cell, decision: Decision, facts: CellFacts) -> CellUpdate:
    """The cell waits for the run another requester has in flight for it, and will take that run's outcome."""
    return cell.change(decision=M.FOLLOWING, reason=decision.reason, dagster_run_id=facts.in_flight_run_id)


@dataclass
class _Slots:
    """The run slots a tick may still fill, and the run keys already taken (a resubmitted or reopened cell must
    get a fresh round, or Dagster would skip the run request as a duplicate of an old run)."""

    free: int
    max_active: int
    used_keys: set[str]
    occupancy: dict[int, int] | None  # runs per slot when queuing ahead

    @classmethod
    def of(cls, record: RequestRecord, cells: list[Cell], runs_by_key: dict[str, RunView], in_flight: set[str],
           queue_ahead: bool) -> "_Slots":
        max_active = record.spec.effective_max_active
        per_slot = QUEUED_PER_SLOT + 1 if queue_ahead else 1
        occupancy = _slot_occupancy(in_flight, runs_by_key, max_active) if queue_ahead else None
        # Every key a run was ever created under (a cell keeps only its latest).
        used = {c.run_key for c in cells if c.run_key} | set(runs_by_key)
        return cls(max_active * per_slot - len(in_flight), max_active, used, occupancy)

    def take(self, record: RequestRecord, chunk: list[Cell], result: TickResult) -> None:
        """Submit ``chunk`` as one run in a free slot, marking its cells submitted."""
        partitions = sorted({c.partition_key for c in chunk})
        label = partitions[0] if len(partitions) == 1 else f"{partitions[0]}..{partitions[-1]}"
        round_no = 1
        while run_key(record.request_id, label, round_no) in self.used_keys:
            round_no += 1
        key = run_key(record.request_id, label, round_no)
        self.used_keys.add(key)
        for cell in chunk:
            result.cell_updates.append(cell.change(decision=M.SUBMITTED, run_key=key, reason=None))
        submission = _submission(record.spec, chunk, key)
        occupancy = self.occupancy
        if occupancy is not None:
            slot = min(range(self.max_active), key=lambda n: (occupancy[n], n))
            occupancy[slot] += 1
            submission = replace(submission, slot=slot)
        result.submissions.append(submission)
        self.free -= 1


def _submit_pending(
    graph: AssetGraph,
    record: RequestRecord,
    cells: list[Cell],
    eligible: list[Cell],
    facts_of: Callable[[str, str], CellFacts],
    cascade_confirmed: bool,
    slots: _Slots,
    result: TickResult,
) -> int:
    """Decide and submit the pending cells that may run now, group by group; returns how many cascaded cells wait
    for ``request confirm``. Ready cells left unsubmitted for lack of slots stay pending for the next tick."""
    spec = record.spec
    by_cell = {c.key: c for c in cells}
    awaiting_confirmation = 0
    batch_size = record.spec.partitions_per_run
    for group, kind in pending_groups(graph, eligible, batch_size):
        if spec.confirm_cascade and not cascade_confirmed:
            held = [c for c in group if c.origin == CellOrigin.CASCADE]
            awaiting_confirmation += len(held)
            group = [c for c in group if c.origin != CellOrigin.CASCADE]
        if kind == CHAIN:
            _submit_chain(graph, record, group, cells, by_cell, facts_of, batch_size, slots, result)
            continue
        ready, blocked = readiness(graph, group, cells, by_cell, batch=kind == BATCH)
        for cell, reason in blocked:
            result.cell_updates.append(cell.skip(reason, SkipKind.LEFT_UNPUBLISHED))
        if ready is None:
            break  # a depends-on-past cell waits for its previous interval: keep strict order
        if not ready:
            continue
        if slots.free <= 0:
            break
        if kind == BATCH:
            creates = _decided(spec, graph, _days_the_slots_take(graph, ready, facts_of, spec, batch_size, slots),
                               facts_of, result)
            days = len({c.partition_key for c in creates})
            chunks = contiguous_chunks(creates, chunk_size(batch_size, days, slots.free, slots.max_active))
        else:
            creates = _decided(spec, graph, ready, facts_of, result)
            chunks = [creates] if creates else []  # one interval, one run
        for chunk in chunks:
            if slots.free <= 0:
                break
            slots.take(record, chunk, result)
    return awaiting_confirmation


def _decided(spec: M.RequestSpec, graph: AssetGraph, ready: list[Cell], facts_of: Callable[[str, str], CellFacts],
             result: TickResult) -> list[Cell]:
    """The ready cells the reprocess policy runs now; the others are skipped with its reason."""
    creates = []
    for cell in ready:
        facts = facts_of(cell.asset, cell.partition_key)
        decision = decide(spec, graph[cell.asset], facts)
        if decision.action == CREATE:
            creates.append(cell)
        elif decision.action == FOLLOW:
            result.cell_updates.append(_follow(cell, decision, facts))
        else:
            result.cell_updates.append(cell.skip(decision.reason, decision.skip_kind))
    return creates


def _days_the_slots_take(graph: AssetGraph, ready: list[Cell], facts_of: Callable[[str, str], CellFacts],
                         spec: M.RequestSpec, batch_size: int, slots: _Slots) -> list[Cell]:
    """The ready cells of a batch group whose days decide this tick's runs, in ``ready``'s order: days in request
    order (the order its runs are cut in) until the free slots' runs are known. A later day is decided, and its
    skip or follow recorded, on the tick that reaches it (a ten-year request's thousands of days are not decided
    every time two runs are submitted).

    The runs are known once the days to create reach K runs' worth of each slot ``chunk_size`` spreads over (it
    then cuts K days a run whatever comes after) and one more run has begun after the free slots' runs (the last
    of them can grow no more). As in ``contiguous_chunks``, a day with nothing to create is in no run, and a run
    ends where the next day to create is not adjacent to its last. Days whose cells interleave in request order
    (cells a cascade appended) are all decided: their runs' order is then known only from what is created."""
    by_day: dict[str, list[Cell]] = {}
    for cell in sorted(ready, key=lambda c: c.ordinal):
        if cell.partition_key in by_day and next(reversed(by_day)) != cell.partition_key:
            return ready
        by_day.setdefault(cell.partition_key, []).append(cell)
    enough = batch_size * max(min(slots.free, slots.max_active), 1)
    taken: set[tuple[str, str]] = set()
    create_days, runs, run_days, last = 0, 0, 0, ""
    for day, day_cells in by_day.items():
        taken.update(c.key for c in day_cells)
        if not any(decide(spec, graph[c.asset], facts_of(c.asset, c.partition_key)).action == CREATE
                   for c in day_cells):
            continue
        create_days += 1
        if runs and run_days < batch_size and adjacent(last, day):
            run_days += 1
        else:
            runs, run_days = runs + 1, 1
        last = day
        if create_days >= enough and runs > slots.free:
            break
    return [c for c in ready if c.key in taken]


def _submit_chain(
    graph: AssetGraph,
    record: RequestRecord,
    group: list[Cell],
    cells: list[Cell],
    by_cell: dict[tuple[str, str], Cell],
    facts_of: Callable[[str, str], CellFacts],
    batch_size: int,
    slots: _Slots,
    result: TickResult,
) -> None:
    """Submit the next run of one depends-on-past asset: its next consecutive days that may run now, up to K, in
    order. Cells are decided one by one until the run is full or one is not to run; a day the policy skips before
    the run's first day is skipped, one after it waits for the next run (decided when that run is submitted)."""
    ready, blocked = chain_readiness(graph, group, cells, by_cell)
    for cell, reason in blocked:
        result.cell_updates.append(cell.skip(reason, SkipKind.LEFT_UNPUBLISHED))
    if not ready or slots.free <= 0:
        return
    chunk: list[Cell] = []
    for cell in ready:
        if len(chunk) >= batch_size:
            break
        facts = facts_of(cell.asset, cell.partition_key)
        decision = decide(record.spec, graph[cell.asset], facts)
        if decision.action == CREATE:
            chunk.append(cell)
        elif chunk:
            break
        elif decision.action == FOLLOW:
            result.cell_updates.append(_follow(cell, decision, facts))
            break  # the asset's next day reads this one: it waits for the run that writes it
        else:
            result.cell_updates.append(cell.skip(decision.reason, decision.skip_kind))
    if chunk:
        slots.take(record, chain_chunks(chunk, batch_size)[0], result)


def _slot_occupancy(in_flight: set[str], runs_by_key: dict[str, RunView], max_active: int) -> dict[int, int]:
    occupancy = dict.fromkeys(range(max_active), 0)
    for key in in_flight:
        run = runs_by_key.get(key)
        if run is not None and run.slot is not None and run.slot in occupancy:
            occupancy[run.slot] += 1
    return occupancy


def _resubmissions(
    spec: M.RequestSpec, cells: list[Cell], runs_by_key: dict[str, RunView], rerequest_before: str | None
) -> list[Submission]:
    """The submitted cells whose run does not exist yet, requested again under their run keys."""
    resubmit: dict[str, list[Cell]] = {}
    for cell in cells:
        missing = cell.decision == M.SUBMITTED and cell.run_key not in runs_by_key
        if missing and cell.run_key is not None and _may_rerequest(cell, rerequest_before):
            resubmit.setdefault(cell.run_key, []).append(cell)
    return [_submission(spec, group, key) for key, group in resubmit.items()]


def _may_rerequest(cell: Cell, before: str | None) -> bool:
    """Whether a submitted cell whose run is missing may be requested again now (see ``REREQUEST_GRACE_SECONDS``)."""
    return before is None or not cell.submitted_at or cell.submitted_at < before


def _submission(spec: M.RequestSpec, cells: list[Cell], key: str) -> Submission:
    ordered = sorted(cells, key=lambda c: c.ordinal)
    assets = tuple(dict.fromkeys(c.asset for c in ordered))
    partitions = tuple(sorted({c.partition_key for c in ordered}))
    cells_written = tuple(c.key for c in ordered)
    configs = {asset: spec.config_for(asset) for asset in assets if spec.config_for(asset)}
    return Submission(partitions, assets, key, cells_written, configs=configs)
