"""Pausing a request, on SQLite and PostgreSQL: the driver's tick submits nothing while paused but settles what
is in flight, never closes the request, and a resume restores the status the request had."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidInput, NotFound
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.driver_tick import tick
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.pauses import Pauses
from backfill_assets.examples.orders.domain import RAW_ORDERS
from tests.orders import GRAPH
from tests.specs import spec_of

CODE = "git-abc123"
DAYS = ["2022-10-03", "2022-10-04", "2022-10-05"]


def _request(ledger: Ledger, first: str = DAYS[0], last: str = DAYS[-1], **options) -> str:
    spec = spec_of(GRAPH, "2022-10-31", assets=RAW_ORDERS, first=first, last=last, requested_by="tester",
                        partitions_per_run=1, **options)
    return ledger.create(M.new_request_id(utc_now()), spec, CODE, spec.excluded_cells(GRAPH)).request_id


def _tick(ledger: Ledger, request_id: str, runs=None, states=None, code=CODE):
    """One driver tick written to the ledger as the sensor writes it (only while the status it read stands)."""
    record = ledger.get(request_id)
    result = tick(GRAPH, record, ledger.cells(request_id), runs or {},
                  lambda asset, partition, run_id: (states or {}).get((asset, partition)),
                  lambda asset, partition: CellFacts(), code)
    ledger.update_cells(request_id, result.cell_updates, expect_status=record.status)
    if result.status:
        ledger.set_status(request_id, *result.status, expect_status=record.status)
    return result


def _runs(submissions, status: str) -> dict[str, RunView]:
    return {s.run_key: RunView(f"run-{s.partition}", s.run_key, s.partition, status) for s in submissions}


def _tables(catalog: Catalog) -> dict[str, list]:
    with catalog.engine.connect() as conn:
        return {t.name: sorted(map(tuple, conn.execute(sa.select(t)).all()))
                for t in (schema.requests, schema.request_items, schema.claims, schema.request_pauses)}


@pytest.fixture
def ledger(catalog) -> Ledger:
    return Ledger(catalog)


def test_a_paused_request_settles_its_runs_in_flight_submits_nothing_and_never_closes(ledger):
    rid = _request(ledger, max_active=3)
    first = _tick(ledger, rid).submissions
    assert len(first) == 3
    Pauses(ledger.catalog).pause(rid, "alice", "warehouse maintenance")

    # Recorded submissions whose runs do not exist yet are held too: a paused request launches nothing.
    assert _tick(ledger, rid).submissions == []
    done = _tick(ledger, rid, runs=_runs(first, "SUCCESS"), states={(RAW_ORDERS, d): "PUBLISHED" for d in DAYS})
    assert done.submissions == [] and done.status is None
    assert [c.decision for c in ledger.cells(rid)] == [M.PUBLISHED] * 3
    assert ledger.get(rid).status == M.PAUSED  # every cell is done, and still it does not close

    Pauses(ledger.catalog).resume(rid, "bob")
    assert ledger.get(rid).status == M.OPEN
    assert _tick(ledger, rid).status[0] == M.COMPLETED and ledger.get(rid).status == M.COMPLETED


def test_a_run_that_failed_before_writing_while_paused_goes_back_to_pending_for_the_resume(ledger):
    rid = _request(ledger, max_active=1)
    [first] = _tick(ledger, rid).submissions
    Pauses(ledger.catalog).pause(rid, "alice")
    assert _tick(ledger, rid, runs=_runs([first], "FAILURE")).submissions == []
    assert [c.decision for c in ledger.cells(rid)] == [M.PENDING] * 3
    Pauses(ledger.catalog).resume(rid, "alice")
    [again] = _tick(ledger, rid, runs=_runs([first], "FAILURE")).submissions
    assert again.partition == DAYS[0] and again.run_key.endswith("/2")


def test_a_pause_keeps_the_claims_and_a_resume_restores_open_with_the_same_frozen_plan(ledger):
    rid = _request(ledger)
    before = ledger.get(rid).row
    with ledger.engine.connect() as conn:
        claims = conn.execute(sa.select(schema.claims).where(schema.claims.c.request_id == rid)).all()
    pause, already = Pauses(ledger.catalog).pause(rid, "alice", "why not")
    assert not already and pause.status_before == M.OPEN and len(claims) == 3
    with ledger.engine.connect() as conn:
        assert conn.execute(sa.select(schema.claims).where(schema.claims.c.request_id == rid)).all() == claims
    with pytest.raises(Exception, match="overlaps an open request"):
        _request(ledger)

    resumed = Pauses(ledger.catalog).resume(rid, "bob")
    after = ledger.get(rid).row
    assert resumed.resumed_by == "bob" and resumed.resumed_at >= resumed.paused_at
    assert {k: v for k, v in after.items() if k != "message"} == {k: v for k, v in before.items() if k != "message"}
    assert after["message"] == before["message"]


def test_pausing_twice_is_idempotent_and_keeps_the_first_pauses_who_and_why(ledger):
    rid = _request(ledger)
    first, _ = Pauses(ledger.catalog).pause(rid, "alice", "first reason")
    before = _tables(ledger.catalog)
    again, already = Pauses(ledger.catalog).pause(rid, "bob", "second reason")
    assert already and (again.paused_by, again.reason) == ("alice", "first reason")
    assert again.paused_at == first.paused_at and _tables(ledger.catalog) == before


def test_a_paused_waiting_request_takes_no_claims_and_resumes_waiting(ledger):
    holder = _request(ledger, first=DAYS[0], last=DAYS[0])
    waiter = _request(ledger, wait_for_overlap=True)
    assert ledger.get(waiter).status == M.WAITING
    Pauses(ledger.catalog).pause(waiter, "alice")
    ledger.cancel(holder)  # the claims it waited for are free now
    assert ledger.try_claim(waiter) is False  # paused: it does not take them behind its pauser's back
    with ledger.engine.connect() as conn:
        assert conn.execute(sa.select(schema.claims).where(schema.claims.c.request_id == waiter)).all() == []
    Pauses(ledger.catalog).resume(waiter, "alice")
    assert ledger.get(waiter).status == M.WAITING
    assert ledger.try_claim(waiter) is True and ledger.get(waiter).status == M.OPEN


def test_a_blocked_request_resumes_blocked_with_its_message(ledger):
    rid = _request(ledger)
    _tick(ledger, rid, code="git-edited")
    blocked = ledger.get(rid).row["message"]
    Pauses(ledger.catalog).pause(rid, "alice")
    assert _tick(ledger, rid, code="git-edited").status is None and ledger.get(rid).status == M.PAUSED
    Pauses(ledger.catalog).resume(rid, "alice")
    assert (ledger.get(rid).status, ledger.get(rid).row["message"]) == (M.BLOCKED, blocked)


def test_a_paused_request_can_be_cancelled_and_its_pending_cells_are_cancelled(ledger):
    rid = _request(ledger, max_active=1)
    _tick(ledger, rid)
    Pauses(ledger.catalog).pause(rid, "alice")
    submitted = ledger.cancel(rid)
    assert [c.partition_key for c in submitted] == [DAYS[0]]
    assert [c.decision for c in ledger.cells(rid)] == [M.SUBMITTED, M.CELL_CANCELLED, M.CELL_CANCELLED]
    assert ledger.get(rid).status == M.CANCELLED and Pauses(ledger.catalog).current() == {}
    [pause] = Pauses(ledger.catalog).history(rid)
    assert pause.paused_by == "alice" and pause.resumed_at is None  # ended by the cancel


def test_refusals_write_nothing(ledger):
    closed = _request(ledger, first=DAYS[0], last=DAYS[0])
    ledger.cancel(closed)
    adopted = "dg-abcdefgh"
    spec = spec_of(GRAPH, "2022-10-31", assets=RAW_ORDERS, first=DAYS[1], last=DAYS[1], requested_by="ui")
    ledger.create(adopted, spec, CODE, {}, source=M.RequestSource.DAGSTER)
    open_one = _request(ledger, first=DAYS[2], last=DAYS[2])
    pauses = Pauses(ledger.catalog)
    before = _tables(ledger.catalog)
    for refused, message in [
        (lambda: pauses.pause(closed, "alice"), "is cancelled; only a waiting, open or blocked request"),
        (lambda: pauses.pause(adopted, "alice"), "Dagster's backfill daemon launches its runs"),
        (lambda: pauses.resume(open_one, "alice"), "is not paused (it is open)"),
        (lambda: pauses.pause(open_one, "  "), "by must name someone"),
        (lambda: pauses.pause(open_one, "alice", "bad\x00reason"), "control character"),
    ]:
        with pytest.raises(InvalidInput, match=message.replace("(", r"\(").replace(")", r"\)")):
            refused()
    with pytest.raises(NotFound):
        pauses.pause("req-20221001-00000000", "alice")
    assert _tables(ledger.catalog) == before
