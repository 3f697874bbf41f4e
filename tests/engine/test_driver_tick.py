"""The driver's tick over facts, no daemon: Airflow's backfill semantics as a matrix of plain unit tests.

The e2e suite proves the same things through a real dagster-daemon; these pin the logic itself, fast.
"""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.driver_tick import tick
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.settling import RunView, settle
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS
from tests.orders import GRAPH
from tests.specs import spec_of

CODE = "git-abc123"
DAYS = ["2022-10-01", "2022-10-02", "2022-10-03", "2022-10-04", "2022-10-05"]


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(Catalog(f"sqlite:///{tmp_path}/catalog.db"))


def _request(ledger: Ledger, assets: str = DAILY_REVENUE, **options) -> str:
    options.setdefault("partitions_per_run", 1)  # these pin the per-interval path; auto would batch max_active=1
    spec = spec_of(GRAPH, "2022-10-31", assets=assets, first=DAYS[0], last=DAYS[-1], requested_by="tester",
                        **options)
    record = ledger.create(M.new_request_id(utc_now()), spec, CODE, spec.excluded_cells(GRAPH))
    return record.request_id


def _tick(ledger: Ledger, request_id: str, runs=None, states=None, facts=None, code=CODE, queue_ahead=False,
          followed=None):
    result = tick(
        GRAPH,
        ledger.get(request_id),
        ledger.cells(request_id),
        runs or {},
        lambda asset, partition, run_id: (states or {}).get((asset, partition)),
        lambda asset, partition: (facts or {}).get((asset, partition), CellFacts()),
        code,
        queue_ahead=queue_ahead,
        followed_runs=followed,
    )
    ledger.update_cells(request_id, result.cell_updates)
    if result.status:
        ledger.set_status(request_id, *result.status)
    return result


def _days(result) -> list[str]:
    return [s.partition for s in result.submissions]


@pytest.mark.parametrize("order, first_two", [("forward", DAYS[:2]), ("backward", DAYS[::-1][:2])])
def test_at_most_max_active_runs_in_the_requests_order(ledger, order, first_two):
    rid = _request(ledger, max_active=2, order=order)
    first = _tick(ledger, rid)
    assert _days(first) == first_two
    # A tick that sees no run for a submitted cell asks for it again under the same run key (Dagster launches a
    # key once, so a tick that died after recording its decisions loses nothing and duplicates nothing).
    assert [s.run_key for s in _tick(ledger, rid).submissions] == [s.run_key for s in first.submissions]
    running = {s.run_key: RunView(f"run-{s.partition}", s.run_key, s.partition, "STARTED") for s in first.submissions}
    assert _days(_tick(ledger, rid, runs=running)) == []  # in flight: nothing more until one finishes


def test_queue_ahead_keeps_one_run_queued_behind_each_slot(ledger):
    rid = _request(ledger, max_active=2)
    result = _tick(ledger, rid, queue_ahead=True)
    assert _days(result) == DAYS[:4] and [s.slot for s in result.submissions] == [0, 1, 0, 1]


def test_a_cell_in_flight_elsewhere_is_never_duplicated_whatever_the_policy(ledger):
    rid = _request(ledger, max_active=2, reprocess="completed")
    busy = {(DAILY_REVENUE, DAYS[0]): CellFacts("PUBLISHED", "v1", in_flight_run_id="other-run-0000")}
    result = _tick(ledger, rid, facts=busy)
    assert _days(result) == DAYS[1:3]
    [first] = [c for c in ledger.cells(rid) if c.partition_key == DAYS[0]]
    assert first.decision == M.FOLLOWING and first.reason.startswith("in flight (run other-ru): follows")
    assert first.dagster_run_id == "other-run-0000"


OTHER = "other-run-0000"


@pytest.mark.parametrize(
    "run_status, version_state, decision, request_status",
    [
        ("SUCCESS", "PUBLISHED", M.PUBLISHED, M.COMPLETED),
        ("FAILURE", "REJECTED", M.REJECTED, M.REQUEST_FAILED),
        ("FAILURE", None, M.FAILED, M.REQUEST_FAILED),
    ],
)
def test_a_following_cell_takes_the_outcome_of_the_run_it_follows_and_the_request_waits_for_it(
    ledger, run_status, version_state, decision, request_status
):
    rid = _request(ledger, max_active=5, reprocess="completed")
    busy = {(DAILY_REVENUE, DAYS[0]): CellFacts("PUBLISHED", "v1", in_flight_run_id=OTHER)}
    submitted = _tick(ledger, rid, facts=busy).submissions
    runs = {s.run_key: RunView(f"run-{s.partition}", s.run_key, s.partition, "SUCCESS") for s in submitted}
    states = {(DAILY_REVENUE, d): "PUBLISHED" for d in DAYS[1:]}
    # Every run of its own has published; the followed run is still queued: the request stays open.
    _tick(ledger, rid, runs=runs, states=states, followed={OTHER: RunView(OTHER, None, DAYS[0], "QUEUED")})
    assert ledger.get(rid).status == M.OPEN
    [first] = [c for c in ledger.cells(rid) if c.partition_key == DAYS[0]]
    assert first.decision == M.FOLLOWING
    states[(DAILY_REVENUE, DAYS[0])] = version_state
    # version_state_of is keyed by cell in this harness: the followed run's version of the day.
    done = _tick(ledger, rid, runs=runs, states=states, followed={OTHER: RunView(OTHER, None, DAYS[0], run_status)})
    [first] = [c for c in ledger.cells(rid) if c.partition_key == DAYS[0]]
    assert first.decision == decision and first.reason.startswith("followed run other-ru")
    assert done.status[0] == request_status and ledger.get(rid).status == request_status


@pytest.mark.parametrize("followed", [{OTHER: RunView(OTHER, None, DAYS[0], "CANCELED")}, {}])
def test_a_following_cell_whose_run_was_cancelled_or_deleted_is_decided_again(ledger, followed):
    rid = _request(ledger, max_active=5, reprocess="completed")
    busy = {(DAILY_REVENUE, DAYS[0]): CellFacts("PUBLISHED", "v1", in_flight_run_id=OTHER)}
    _tick(ledger, rid, facts=busy)
    _tick(ledger, rid, followed=followed)
    [first] = [c for c in ledger.cells(rid) if c.partition_key == DAYS[0]]
    assert first.decision == M.PENDING and first.dagster_run_id is None
    # Decided on the next tick (a tick writes a cell once): nothing in flight now, so it runs.
    again = _tick(ledger, rid, facts={}, runs={})
    assert DAYS[0] in _days(again)


@pytest.mark.parametrize(
    "reprocess, facts, submitted",
    [
        ("none", CellFacts(failed_run_without_version=True), False),
        ("none", CellFacts("PUBLISHED", "v1"), False),
        ("failed", CellFacts("REJECTED", "v1"), True),
        ("failed", CellFacts("PUBLISHED", "v1"), False),
        ("completed", CellFacts("PUBLISHED", "v1"), True),
    ],
)
def test_each_cell_is_decided_by_the_reprocess_policy_when_it_is_submitted(ledger, reprocess, facts, submitted):
    rid = _request(ledger, max_active=1, reprocess=reprocess)
    result = _tick(ledger, rid, facts={(DAILY_REVENUE, DAYS[0]): facts})
    assert (DAYS[0] in _days(result)) is submitted
    if not submitted:
        assert _days(result) == [DAYS[1]]  # a skipped cell does not take a slot


def test_finished_runs_settle_their_cells_and_the_request_completes(ledger):
    rid = _request(ledger, max_active=5)
    submitted = _tick(ledger, rid)
    runs = {s.run_key: RunView(f"run-{s.partition}", s.run_key, s.partition, "SUCCESS") for s in submitted.submissions}
    states = {(DAILY_REVENUE, d): "PUBLISHED" for d in DAYS[:-1]} | {(DAILY_REVENUE, DAYS[-1]): "REJECTED"}
    done = _tick(ledger, rid, runs=runs, states=states)
    decisions = [c.decision for c in ledger.cells(rid)]
    assert decisions == [M.PUBLISHED] * 4 + [M.REJECTED]
    # Done means published: a request with a rejected cell closes failed, not completed.
    assert done.status[0] == M.REQUEST_FAILED and ledger.get(rid).status == M.REQUEST_FAILED


def test_a_run_that_failed_before_writing_is_resubmitted_under_a_new_round(ledger):
    rid = _request(ledger, max_active=5)
    first = _tick(ledger, rid).submissions
    runs = {s.run_key: RunView(f"run-{s.partition}", s.run_key, s.partition, "STARTED") for s in first}
    runs[first[0].run_key] = RunView("run-failed", first[0].run_key, DAYS[0], "FAILURE")  # no version written
    assert _tick(ledger, rid, runs=runs).submissions == []  # settled back to pending, decided afresh next tick
    [again] = _tick(ledger, rid, runs=runs).submissions
    assert again.partition == DAYS[0] and again.run_key == first[0].run_key.rsplit("/", 1)[0] + "/2"


def test_a_code_version_change_blocks_the_request_before_anything_new_is_submitted(ledger):
    rid = _request(ledger, max_active=2)
    result = _tick(ledger, rid, code="git-edited")
    assert result.submissions == [] and ledger.get(rid).status == M.BLOCKED
    assert "code version changed (frozen git-abc123, loaded git-edited)" in ledger.get(rid).row["message"]


def test_a_depends_on_past_asset_runs_one_day_at_a_time_and_stops_after_a_rejected_day(ledger):
    rid = _request(ledger, assets=CUSTOMER_SNAPSHOT)  # serial: max_active defaults to 1
    [first] = _tick(ledger, rid).submissions
    assert first.partition == DAYS[0]
    runs = {first.run_key: RunView("run-1", first.run_key, first.partition, "SUCCESS")}
    _tick(ledger, rid, runs=runs, states={(CUSTOMER_SNAPSHOT, DAYS[0]): "REJECTED"})
    after = _tick(ledger, rid, runs=runs)
    assert after.submissions == []
    later = {c.partition_key: c for c in ledger.cells(rid)}
    assert all(later[d].decision == M.SKIPPED and "not published (depends on past)" in later[d].reason
               for d in DAYS[1:])


def test_a_downstream_cell_waits_for_its_upstream_in_the_same_request(ledger):
    rid = _request(ledger, assets=f"{ORDER_FACTS},{DAILY_REVENUE}", max_active=1)
    [run] = _tick(ledger, rid).submissions
    assert run.assets == (ORDER_FACTS, DAILY_REVENUE) and run.partition == DAYS[0]  # one run per interval


def test_a_failed_cells_reason_names_the_error_its_version_ended_with():
    run = RunView("r1", "k1", "2022-09-01", "FAILURE")
    settled = settle(run, "ABANDONED", version_error="abandoned: step raw_orders lost its worker 2 time(s)")
    assert (settled.decision, settled.reason) == (
        M.FAILED, "run failure, version ABANDONED: abandoned: step raw_orders lost its worker 2 time(s)")
    assert settle(run, "ABANDONED", version_error="x" * 2000).reason.endswith(": " + "x" * 500)
    # Nothing written: nothing to name; a published version: not a failure.
    assert settle(run, None, version_error="ignored").reason == "run failure, no version written"
    assert settle(run, "PUBLISHED", version_error="ignored").decision == M.PUBLISHED
