"""What an idle driver tick compares instead of reading a request's cells (``engine/plan/idle_ticks.py``): the
ledger's state read in SQL is the state a tick that changed nothing leaves, and every writer of a request's cells
moves it."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import CellOrigin
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.idle_ticks import IdleTicks, TickInputs
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.tick_tokens import LedgerState
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS
from tests.orders import GRAPH
from tests.specs import spec_of

DAYS = ["2022-10-01", "2022-10-02", "2022-10-03"]


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(Catalog(f"sqlite:///{tmp_path}/catalog.db"))


def _request(ledger: Ledger) -> str:
    spec = spec_of(GRAPH, "2022-10-31", assets=f"{ORDER_FACTS},{DAILY_REVENUE}", first=DAYS[0], last=DAYS[-1],
                   requested_by="tester", partitions_per_run=1)
    return ledger.create(M.new_request_id(utc_now()), spec, "git-abc", {}).request_id


def _after_a_tick_that_changed_nothing(ledger: Ledger, rid: str) -> LedgerState:
    snapshot = ledger.snapshot(rid)
    assert ledger.record_tick(snapshot, [])
    return LedgerState.of(snapshot.token + 1, snapshot.record, snapshot.cells)


def test_the_state_read_in_sql_is_the_one_a_tick_that_changed_nothing_leaves(ledger):
    rid = _request(ledger)
    left = _after_a_tick_that_changed_nothing(ledger, rid)
    assert ledger.state(rid) == left
    assert dict(left.decisions) == {M.PENDING: 6}
    assert ledger.state("req-20221001-00000000") is None


def test_every_writer_of_a_requests_cells_or_row_moves_its_state(ledger):
    rid = _request(ledger)
    cell = ledger.cells(rid)[0]
    writes = [
        ("a tick's records", lambda: ledger.record_tick(ledger.snapshot(rid), [cell.change(decision=M.PUBLISHED)])),
        ("a tick that records nothing", lambda: ledger.record_tick(ledger.snapshot(rid), [])),
        ("cells added (a cascade)", lambda: ledger.add_cells(rid, [(CUSTOMER_SNAPSHOT, DAYS[0])], CellOrigin.CASCADE)),
        ("a finished cell reopened", lambda: ledger.add_cells(rid, [cell.key], CellOrigin.CASCADE, reopen=True)),
        ("the status", lambda: ledger.set_status(rid, M.PAUSED)),
        ("a confirmation", lambda: ledger.confirm(rid)),
        ("a cancel", lambda: ledger.cancel(rid)),
    ]
    for what, write in writes:
        before = ledger.state(rid)
        assert ledger.state(rid) == before  # reading moves nothing
        write()
        assert ledger.state(rid) != before, what


def test_idle_ticks_skip_only_a_tick_given_what_the_remembered_one_was_given(ledger):
    rid = _request(ledger)
    state = _after_a_tick_that_changed_nothing(ledger, rid)
    running = {"k1": RunView("r1", "k1", DAYS[0], "STARTED")}
    inputs = TickInputs(state, TickInputs.runs(running), (), "git-abc", False, None)
    idle = IdleTicks()
    assert not idle.unchanged(rid, inputs) and idle.followed_run_ids(rid) is None
    idle.remember(rid, inputs, ("followed-run",))
    assert idle.unchanged(rid, TickInputs(ledger.state(rid), TickInputs.runs(dict(running)), (), "git-abc", False,
                                          None))
    assert idle.followed_run_ids(rid) == ("followed-run",)
    finished = {"k1": RunView("r1", "k1", DAYS[0], "SUCCESS")}
    for changed in (
        TickInputs(state, TickInputs.runs(finished), (), "git-abc", False, None),
        TickInputs(state, TickInputs.runs(running), (), "git-def", False, None),
        TickInputs(state, TickInputs.runs(running), (), "git-abc", True, None),
        TickInputs(state, TickInputs.runs(running), (), "git-abc", False, "waiting for the propagation sensor"),
    ):
        assert not idle.unchanged(rid, changed)
    idle.keep({"another-request"})
    assert not idle.unchanged(rid, inputs)


def test_a_remembered_idle_tick_is_trusted_for_a_bounded_time_then_the_request_is_ticked_in_full(ledger):
    rid = _request(ledger)
    state = _after_a_tick_that_changed_nothing(ledger, rid)
    inputs = TickInputs(state, (), (), "git-abc", False, None)
    now = [1000.0]
    idle = IdleTicks(full_tick_seconds=30.0, clock=lambda: now[0])
    idle.remember(rid, inputs, ())
    now[0] += 29.9
    assert idle.unchanged(rid, inputs)
    now[0] += 0.1
    assert not idle.unchanged(rid, inputs)  # a change the inputs cannot see waits 30 s at most
    idle.remember(rid, inputs, ())  # the full tick changed nothing again: trusted anew
    assert idle.unchanged(rid, inputs)
