"""The driver's tick over a depends-on-past asset batched (K > 1): its days in runs of up to K consecutive days,
one run of the asset at a time, forward; a day that does not publish ends the chain for this request."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import PREVIOUS_NOT_PUBLISHED, UPSTREAM_NOT_PUBLISHED
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.driver_tick import tick
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS
from tests.orders import GRAPH
from tests.specs import spec_of

CODE = "git-abc123"
DAYS = GRAPH.calendar.keys_between("2022-10-01", "2022-10-10")


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(Catalog(f"sqlite:///{tmp_path}/catalog.db"))


def _request(ledger: Ledger, assets: str = CUSTOMER_SNAPSHOT, **options) -> str:
    spec = spec_of(GRAPH, "2022-10-31", assets=assets, first=DAYS[0], last=DAYS[-1], requested_by="tester",
                        **options)
    return ledger.create(M.new_request_id(utc_now()), spec, CODE, spec.excluded_cells(GRAPH)).request_id


def _tick(ledger: Ledger, rid: str, runs=None, states=None, queue_ahead=True):
    result = tick(GRAPH, ledger.get(rid), ledger.cells(rid), runs or {},
                  lambda asset, partition, run_id: (states or {}).get((asset, partition)),
                  lambda asset, partition: CellFacts(), CODE, queue_ahead=queue_ahead)
    ledger.update_cells(rid, result.cell_updates)
    if result.status:
        ledger.set_status(rid, *result.status)
    return result


def _finished(submission, status: str) -> dict[str, RunView]:
    return {submission.run_key: RunView(f"run-{submission.partition}", submission.run_key, None, status)}


def _cells(ledger: Ledger, rid: str, asset: str = CUSTOMER_SNAPSHOT) -> dict:
    return {c.partition_key: c for c in ledger.cells(rid) if c.asset == asset}


@pytest.mark.parametrize("k", ["auto", "10", "30"])
def test_a_ten_day_chain_with_k_of_ten_or_more_is_one_submission_of_ten_days(ledger, k):
    rid = _request(ledger, partitions_per_run=k)
    [run] = _tick(ledger, rid).submissions
    assert run.partitions == tuple(DAYS) and run.assets == (CUSTOMER_SNAPSHOT,) and run.batched
    assert run.run_key == f"{rid}/{DAYS[0]}..{DAYS[-1]}/1"


def test_two_runs_of_one_chain_are_never_in_flight_at_once(ledger):
    rid = _request(ledger, partitions_per_run=3)
    [first] = _tick(ledger, rid).submissions  # queue-ahead leaves 3 slots free: the chain still takes one
    assert first.partitions == tuple(DAYS[:3])
    running = {first.run_key: RunView("run-1", first.run_key, None, "STARTED")}
    assert _tick(ledger, rid, runs=running).submissions == []
    published = {(CUSTOMER_SNAPSHOT, d): "PUBLISHED" for d in DAYS[:3]}
    [second] = _tick(ledger, rid, runs=_finished(first, "SUCCESS"), states=published).submissions
    assert second.partitions == tuple(DAYS[3:6])  # only after the first settled, from the day after its last


def test_after_a_rejected_day_the_later_days_are_skipped_naming_their_previous_day_and_nothing_is_resubmitted(
    ledger,
):
    rid = _request(ledger)
    [run] = _tick(ledger, rid).submissions
    states = {(CUSTOMER_SNAPSHOT, d): "PUBLISHED" for d in DAYS[:3]} | {(CUSTOMER_SNAPSHOT, DAYS[3]): "REJECTED"}
    settled = _tick(ledger, rid, runs=_finished(run, "FAILURE"), states=states)
    assert settled.submissions == []
    cells = _cells(ledger, rid)
    assert [cells[d].decision for d in DAYS[:4]] == [M.PUBLISHED] * 3 + [M.REJECTED]
    for previous, day in zip(DAYS[3:-1], DAYS[4:], strict=True):
        assert (cells[day].decision, cells[day].reason) == (M.SKIPPED, PREVIOUS_NOT_PUBLISHED.format(previous))
    assert ledger.get(rid).status == M.REQUEST_FAILED  # done means published
    assert _tick(ledger, rid, runs=_finished(run, "FAILURE"), states=states).submissions == []


def test_a_chain_run_that_failed_before_writing_is_resubmitted_from_its_first_unpublished_day(ledger):
    rid = _request(ledger)
    [run] = _tick(ledger, rid).submissions
    # Days 1-2 published, then the run died before writing day 3 (e.g. its storage went away).
    states = {(CUSTOMER_SNAPSHOT, d): "PUBLISHED" for d in DAYS[:2]}
    assert _tick(ledger, rid, runs=_finished(run, "FAILURE"), states=states).submissions == []
    runs = _finished(run, "FAILURE")  # every run of the request, as Dagster lists them
    [again] = _tick(ledger, rid, runs=runs, states=states).submissions
    assert again.partitions == tuple(DAYS[2:]) and again.run_key == f"{rid}/{DAYS[2]}..{DAYS[-1]}/1"
    # Dying again before writing day 3: resubmitted under the next round of that key, then failed for good.
    runs |= _finished(again, "FAILURE")
    assert _tick(ledger, rid, runs=runs, states=states).submissions == []
    [again] = _tick(ledger, rid, runs=runs, states=states).submissions
    assert again.run_key == f"{rid}/{DAYS[2]}..{DAYS[-1]}/2"
    runs |= _finished(again, "FAILURE")
    assert _tick(ledger, rid, runs=runs, states=states).submissions == []
    [again] = _tick(ledger, rid, runs=runs, states=states).submissions
    assert again.run_key == f"{rid}/{DAYS[2]}..{DAYS[-1]}/3"
    runs |= _finished(again, "FAILURE")
    assert _tick(ledger, rid, runs=runs, states=states).submissions == []
    cells = _cells(ledger, rid)
    assert cells[DAYS[2]].decision == M.FAILED
    assert cells[DAYS[3]].reason == PREVIOUS_NOT_PUBLISHED.format(DAYS[2])


def test_a_chain_day_whose_upstream_the_request_did_not_publish_ends_the_chain(ledger):
    rid = _request(ledger, assets=f"{ORDER_FACTS},{CUSTOMER_SNAPSHOT}")
    [batch] = _tick(ledger, rid).submissions
    assert batch.assets == (ORDER_FACTS,) and batch.partitions == tuple(DAYS)  # the chain waits for it
    states = {(ORDER_FACTS, d): "PUBLISHED" for d in DAYS} | {(ORDER_FACTS, DAYS[5]): "REJECTED"}
    [chain] = _tick(ledger, rid, runs=_finished(batch, "FAILURE"), states=states).submissions
    assert chain.assets == (CUSTOMER_SNAPSHOT,) and chain.partitions == tuple(DAYS[:5])
    cells = _cells(ledger, rid)
    assert (cells[DAYS[5]].decision, cells[DAYS[5]].reason) == (M.SKIPPED, UPSTREAM_NOT_PUBLISHED)
    assert cells[DAYS[6]].reason == PREVIOUS_NOT_PUBLISHED.format(DAYS[5])


def test_one_interval_per_run_keeps_a_chain_one_day_at_a_time(ledger):
    rid = _request(ledger, partitions_per_run=1)
    [first] = _tick(ledger, rid).submissions
    assert first.partitions == (DAYS[0],) and not first.batched
