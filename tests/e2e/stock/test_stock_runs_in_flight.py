"""Every promise on a stock instance, with runs in flight: a day with a queued run never run again, pause and resume,
cancel, and a backfill launched through the UI's GraphQL mutation. Same home and daemon as
``test_stock_requests.py`` (``conftest.py``), on its own days:

    09-08         a day with a queued run: never run again, the request follows that run
    09-09..09-11  pause with runs in flight, resume
    09-12..09-14  cancel with a run in its step
    09-15..09-16  a backfill launched through the UI's GraphQL mutation, adopted, kept to its reprocess tag
    09-01..09-03  (after the other module's tests) a UI backfill of the depends-on-past customer_snapshot: each day
                  computed from the version the backfill published of the day before
"""

from __future__ import annotations

from itertools import pairwise

import dagster as dg
import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS

from ..conftest import E2E, FINISHED, HOLD_FILE, launch_held_run, poll
from ..services import LAUNCH_BACKFILL, serving_webserver
from .conftest import (
    ADOPTION_TIMEOUT,
    DROP_ROWS,
    PATIENCE,
    STOCK_GROUP,
    STOCK_PATIENCE,
    TIMEOUT,
    order_facts_versions,
)

pytestmark = [pytest.mark.daemon, STOCK_GROUP, STOCK_PATIENCE]

# ---- in-flight days, pause and resume, cancel -------------------------------------------------------------------

IN_FLIGHT_DAY = "2022-09-08"
# The shipped concurrency block's own hold (limit 0): Dagster's coordinator never dequeues a run tagged so.
SHIPPED_HOLD = (T.QUEUE_HOLD, T.HELD)


def test_a_day_with_a_queued_run_is_never_run_again_and_the_request_follows_that_run(stock):
    e2e = stock
    held = launch_held_run(e2e, IN_FLIGHT_DAY, hold=SHIPPED_HOLD)
    try:
        args = ("--assets", f"{RAW_ORDERS},{ORDER_FACTS}", "--from", IN_FLIGHT_DAY, "--to", IN_FLIGHT_DAY,
                "--reprocess", "completed")
        follows = f"in flight (run {held.run_id[:8]}): follows its outcome"
        assert [(c["action"], c["reason"]) for c in e2e.dry_run(*args)] == [("follow", follows)] * 2
        rid = e2e.create(*args)["request_id"]
        poll(lambda: {c["decision"] for c in e2e.show(rid)["cells"]} == {M.FOLLOWING}, PATIENCE, "both cells follow")
        e2e.wait_driver_ticks(1)  # a whole driver pass since: still following, nothing launched
        shown = e2e.show(rid)
        assert shown["status"] == "open" and {c["dagster_run_id"] for c in shown["cells"]} == {held.run_id}, shown
        assert e2e.run_records(rid) == []
        runs = e2e.instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_PARTITION: IN_FLIGHT_DAY}))
        assert [(r.run_id, r.status) for r in runs] == [(held.run_id, dg.DagsterRunStatus.QUEUED)]
        # The followed run ends without writing the day: the cells are decided again, run once and publish.
        e2e.instance.report_run_canceled(e2e.instance.get_run_by_id(held.run_id))
        assert e2e.wait(rid, timeout=TIMEOUT)["status"] == "completed"
        [record] = e2e.run_records(rid)
        assert {c["decision"] for c in e2e.show(rid)["cells"]} == {M.PUBLISHED}
        assert {e2e.catalog.current(a, IN_FLIGHT_DAY).dagster_run_id for a in (RAW_ORDERS, ORDER_FACTS)} == {
            record.dagster_run.run_id}
    finally:
        run = e2e.instance.get_run_by_id(held.run_id)
        if run.status == dg.DagsterRunStatus.QUEUED:
            e2e.instance.report_run_canceled(run)


PAUSE_DAYS = ["2022-09-09", "2022-09-10", "2022-09-11"]
CANCEL_DAYS = ["2022-09-12", "2022-09-13", "2022-09-14"]


def _one_running_one_queued(e2e: E2E, request_id: str) -> list[dg.DagsterRun] | None:
    """The request's runs once one is in its step (held there) and one waits queued behind it: with
    ``--max-active 1`` the driver creates no other run."""
    runs = [r.dagster_run for r in e2e.run_records(request_id)]
    statuses = sorted(r.status.value for r in runs)
    in_step = (e2e.home.parent / f"{HOLD_FILE}.held").exists()
    return runs if statuses == ["QUEUED", "STARTED"] and in_step else None


def _create_one_at_a_time(e2e: E2E, days: list[str]) -> str:
    (e2e.home.parent / f"{HOLD_FILE}.held").unlink(missing_ok=True)  # the marker a held step leaves
    return e2e.create("--assets", RAW_ORDERS, "--from", days[0], "--to", days[-1], "--max-active", "1",
                      "--partitions-per-run", "1", "--reprocess", "completed")["request_id"]


def _frozen(e2e: E2E, request_id: str) -> tuple:
    """The frozen request: its row but its status and message, and its cells in order."""
    ledger = Ledger(e2e.catalog)
    row = {k: v for k, v in ledger.get(request_id).row.items() if k not in ("status", "message", "closed_at")}
    return row, [(c.asset, c.partition_key, c.ordinal, c.origin) for c in ledger.cells(request_id)]


def _finished_runs(e2e: E2E, request_id: str) -> list[dg.DagsterRun]:
    runs = [r.dagster_run for r in e2e.run_records(request_id)]
    return runs if runs and all(r.status in FINISHED for r in runs) else []


def test_a_request_paused_with_runs_in_flight_settles_them_launches_nothing_and_resumes_its_frozen_cells(stock):
    e2e = stock
    with e2e.holding_steps():
        rid = _create_one_at_a_time(e2e, PAUSE_DAYS)
        frozen = _frozen(e2e, rid)
        in_flight = poll(lambda: _one_running_one_queued(e2e, rid), PATIENCE, "a run in its step, one queued behind it")
        paused = e2e.cli_json("request", "pause", rid, "--reason", "warehouse maintenance", "--by", "alice")
        assert (paused["status"], paused["already_paused"], paused["in_flight"]) == (M.PAUSED, False, 2), paused
    # Released: both runs finish (the second dequeued once the first ends) and their cells settle; the runs' own
    # ends and the sensor's passes launch nothing more while the request is paused.
    ended = poll(lambda: _finished_runs(e2e, rid), PATIENCE, "the runs in flight to finish")
    e2e.wait_driver_ticks(1)  # a whole driver pass after both ends (and after the runs' own end ticks)
    runs = [r.dagster_run for r in e2e.run_records(rid)]
    assert {r.run_id for r in runs} == {r.run_id for r in in_flight} == {r.run_id for r in ended}
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [(r.run_id, r.status) for r in runs]
    shown = e2e.show(rid)
    decisions = {c["partition_key"]: c["decision"] for c in shown["cells"]}
    done = {r.tags[T.DAGSTER_PARTITION] for r in runs}
    assert decisions == {d: M.PUBLISHED if d in done else M.PENDING for d in PAUSE_DAYS}, decisions
    assert shown["status"] == M.PAUSED and shown["pause"]["paused_by"] == "alice", shown

    resumed = e2e.cli_json("request", "resume", rid, "--by", "bob")
    assert resumed["status"] == M.OPEN and resumed["pause"]["resumed_by"] == "bob", resumed
    assert e2e.wait(rid, timeout=TIMEOUT)["status"] == "completed"
    assert {c["decision"] for c in e2e.show(rid)["cells"]} == {M.PUBLISHED}
    assert sorted(r.dagster_run.tags[T.DAGSTER_PARTITION] for r in e2e.run_records(rid)) == PAUSE_DAYS
    assert _frozen(e2e, rid) == frozen


def test_cancelling_a_request_with_a_run_in_its_step_stops_its_runs_and_publishes_nothing(stock):
    e2e = stock
    with e2e.holding_steps():
        rid = _create_one_at_a_time(e2e, CANCEL_DAYS)
        in_flight = poll(lambda: _one_running_one_queued(e2e, rid), PATIENCE, "a run in its step, one queued behind it")
        out = e2e.cli_json("request", "cancel", rid)
        assert out["status"] == "cancelled", out
        # Both runs stopped by the cancel: the queued one cancelled in the queue, the running one terminated
        # through its code server (or, had it not answered in time, marked cancelled: forced).
        assert set(out["terminated_runs"]) | set(out["forced_runs"]) == {r.run_id for r in in_flight}, out
    ended = poll(lambda: _finished_runs(e2e, rid), PATIENCE, "the request's runs to end")
    e2e.wait_driver_ticks(1)  # a whole driver pass after both ends
    assert {r.dagster_run.run_id for r in e2e.run_records(rid)} == {r.run_id for r in in_flight}
    assert all(r.status != dg.DagsterRunStatus.SUCCESS for r in ended), [(r.run_id, r.status) for r in ended]
    # The held step had written and verified its version; released after the cancel, it did not publish it.
    ours = {r.run_id for r in in_flight}
    written = [v for d in CANCEL_DAYS for v in e2e.catalog.versions_of(RAW_ORDERS, d) if v.dagster_run_id in ours]
    assert written and all(v.state != "PUBLISHED" for v in written), [(v.version_id, v.state) for v in written]
    assert all(e2e.catalog.current(RAW_ORDERS, d) is None for d in CANCEL_DAYS)
    shown = e2e.show(rid)
    assert shown["status"] == "cancelled"
    assert {c["decision"] for c in shown["cells"]} == {M.CELL_CANCELLED}, shown["cells"]
    assert e2e.claims_of(rid) == set()


# ---- a backfill launched from the UI ------------------------------------------------------------------------------

UI_DAYS = ["2022-09-15", "2022-09-16"]  # order_facts: a published day, then a rejected day


@pytest.fixture(scope="module")
def webserver(stock):
    """A dagster-webserver on the stock home, for the test that launches as the UI does."""
    yield from serving_webserver(stock.home)


def test_a_backfill_launched_from_the_ui_is_adopted_and_keeps_its_reprocess_tag(stock, webserver):
    e2e = stock
    published, rejected = UI_DAYS
    e2e.prepare(UI_DAYS, [RAW_ORDERS])
    e2e.prepare([published], [ORDER_FACTS])
    e2e.prepare([rejected], [ORDER_FACTS], run_config_for={rejected: DROP_ROWS}, expect_success=False)
    before = order_facts_versions(e2e, UI_DAYS)
    # What the UI's backfill dialog sends when the user adds the tag backfill/reprocess=failed.
    launched = webserver.graphql(LAUNCH_BACKFILL, {"params": {
        "assetSelection": [{"path": [ORDER_FACTS]}], "partitionNames": UI_DAYS,
        "tags": [{"key": T.REPROCESS, "value": "failed"}], "title": "ui backfill on a stock instance",
    }})["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]
    rid = f"dg-{backfill_id}"
    poll(lambda: rid in {r["request_id"] for r in e2e.cli_json("request", "list")}, ADOPTION_TIMEOUT,
         f"{rid} adopted")
    assert e2e.wait(rid, timeout=TIMEOUT)["status"] == "completed"

    shown = e2e.show(rid)
    assert (shown["source"], shown["reprocess"]) == ("dagster", "failed"), shown
    cells = {c["partition_key"]: c for c in shown["cells"]}
    after = order_facts_versions(e2e, UI_DAYS)
    reason = f"latest attempt PUBLISHED ({T.REPROCESS}=failed)"
    assert (cells[published]["decision"], cells[published]["reason"]) == ("skipped", reason), cells[published]
    assert after[published] == before[published]
    logs = " ".join(r.user_message for r in e2e.instance.all_logs(cells[published]["dagster_run_id"]))
    assert f"{ORDER_FACTS} {published}: not recomputed — {reason}" in logs
    assert cells[rejected]["decision"] == M.PUBLISHED, cells[rejected]
    assert after[rejected] == [*before[rejected], e2e.catalog.current(ORDER_FACTS, rejected).version_id]
    # Dagster's backfill launched one run per day, through Dagster's own queue and launcher, each with the tag.
    runs = e2e.instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id}))
    assert sorted(r.tags[T.DAGSTER_PARTITION] for r in runs) == UI_DAYS
    assert all(r.tags[T.REPROCESS] == "failed" and r.status == dg.DagsterRunStatus.SUCCESS for r in runs), runs
    report = e2e.cli_json("reconcile", rid)
    totals = report["totals"]
    assert report["complete"] is True, report
    assert (totals["published"], totals["skipped"], totals["duplicate_publishes"], totals["gaps"]) == (1, 1, 0, 0)


# ---- a depends-on-past asset's UI backfill, unpaced by Dagster's own run queue --------------------------------------

PAST_DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]  # from the calendar's first day: no earlier snapshot needed


def _past_runs(e2e: E2E, backfill_id: str) -> dict[str, dg.DagsterRun]:
    return {r.tags[T.DAGSTER_PARTITION]: r
            for r in e2e.instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id}))}


def _second_day_reached_its_step(e2e: E2E, backfill_id: str) -> bool:
    """The second day's run is in its step: waiting for the first day's run, or (had it not waited) held with its
    version written."""
    second = _past_runs(e2e, backfill_id).get(PAST_DAYS[1])
    if second is None or second.status != dg.DagsterRunStatus.STARTED:
        return False
    waiting = any("waiting for run" in r.user_message for r in e2e.instance.all_logs(second.run_id))
    return waiting or any(v.dagster_run_id == second.run_id for v in e2e.catalog.versions_of(CUSTOMER_SNAPSHOT,
                                                                                               PAST_DAYS[1]))


def test_a_ui_backfill_of_a_depends_on_past_asset_computes_each_day_from_the_one_it_published(stock, webserver):
    """Dagster's queue runs its days at once; the first day's step held before its publish, the second day's step
    waits for the first day's run, so every day reads the version the backfill published, never production's."""
    e2e = stock
    e2e.prepare(PAST_DAYS, [RAW_ORDERS, ORDER_FACTS, CUSTOMER_SNAPSHOT])  # production's versions of every day
    production = {day: e2e.catalog.current(CUSTOMER_SNAPSHOT, day).version_id for day in PAST_DAYS}
    with e2e.holding_steps():
        launched = webserver.graphql(LAUNCH_BACKFILL, {"params": {
            "assetSelection": [{"path": [CUSTOMER_SNAPSHOT]}], "partitionNames": PAST_DAYS,
            "title": "a depends-on-past backfill on a stock instance",
        }})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        backfill_id = launched["backfillId"]
        poll(lambda: _second_day_reached_its_step(e2e, backfill_id), PATIENCE, "the second day's run in its step")
    rid = f"dg-{backfill_id}"
    poll(lambda: rid in {r["request_id"] for r in e2e.cli_json("request", "list")}, ADOPTION_TIMEOUT,
         f"{rid} adopted")
    assert e2e.wait(rid, timeout=TIMEOUT)["status"] == "completed"
    current = {day: e2e.catalog.current(CUSTOMER_SNAPSHOT, day) for day in PAST_DAYS}
    assert all(v.request_id == rid and v.version_id != production[d] for d, v in current.items()), current
    for previous, day in pairwise(PAST_DAYS):
        read = current[day].input_versions[f"{CUSTOMER_SNAPSHOT}/{previous}"]
        assert read == current[previous].version_id, (day, "read", read, "not the backfill's", previous)
