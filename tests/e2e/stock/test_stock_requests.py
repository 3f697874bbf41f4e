"""Every promise on a stock instance: Dagster's own classes only, as on Kubernetes, Docker, ECS or Dagster+.

The home's dagster.yaml names Dagster's ``QueuedRunCoordinator`` with its defaults (a dequeue every 5 s), no run
launcher (Dagster's ``DefaultRunLauncher``: a new process per run, through the code server), no storage block
(Dagster's SQLite classes) and no sensors block; what it copies from the shipped file is plain Dagster config: the
``concurrency`` block (the run queue's tag limits and the pools) and ``run_monitoring``. The daemon is Dagster's own
``dagster-daemon run``: no wake-ups, no warm worker, no lease; sensors every ~5 s.

On it, with the orders example, one daemon for the package (``conftest.py``), each test on its own days of September
2022 (the in-flight, pause, cancel and UI days are ``test_stock_runs_in_flight.py``'s):

    09-01..09-03  a CLI request publishing every good cell and rejecting the defect day (its previous version keeps
                  serving, reconcile exact) within ``--max-active``; an overlapping request waiting, never
                  interleaved; a ``backfill/reprocess=none`` job backfill recomputing nothing. Then a ``cascade``
                  request: downstream of its publish, in order; a rollback naming who read the version
    09-04..09-07  ``--reprocess failed`` re-running only the rejected day, ``completed`` every day, as the dry run said
    09-17         a request frozen under other code: blocked, nothing submitted
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime

import dagster as dg
import pytest
from dagster._core.launcher import DefaultRunLauncher
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.domain import (
    CUSTOMER_SNAPSHOT,
    DAILY_REVENUE,
    ORDER_FACTS,
    RAW_ORDERS,
    REVENUE_ALERT,
)
from backfill_assets.integration import instance_template
from backfill_assets.integration.jobs import BACKFILL_JOB
from tests.orders import MODULE as CODE_LOCATION_MODULE

from ..conftest import CODE_VERSION, E2E, poll
from ..services import dagster_env
from .conftest import ADOPTION_TIMEOUT, DROP_ROWS, STOCK_GROUP, STOCK_PATIENCE, TIMEOUT, order_facts_versions

pytestmark = [pytest.mark.daemon, STOCK_GROUP, STOCK_PATIENCE]

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]
DEFECT_DAY = "2022-09-02"
OVERLAP_DAY = DAYS[-1]  # the overlapping request's one day, the first request's last
NONE_DAYS = DAYS[:2]  # the reprocess-none backfill's: a day the request published, the rejected defect day
BATCHABLE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
DATA_ASSETS = [*BATCHABLE, CUSTOMER_SNAPSHOT]  # customer_snapshot depends on the past: from the calendar's first day


def test_the_home_is_dagsters_own_and_complete_as_it_is(stock):
    instance = stock.instance
    assert type(instance.run_coordinator) is QueuedRunCoordinator
    assert type(instance.run_launcher) is DefaultRunLauncher
    assert type(instance.event_log_storage) is SqliteEventLogStorage
    assert type(instance.run_storage) is SqliteRunStorage
    assert type(instance.schedule_storage) is SqliteScheduleStorage
    # `backfill-assets init` and the product's daemon find nothing missing in it.
    assert instance_template.lacking_blocks(stock.home) == []


def _overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    live = peak = 0
    for _, delta in events:  # an end at the same instant as a start sorts first
        live += delta
        peak = max(peak, live)
    return peak


def _spans(e2e: E2E, request_id: str) -> list[tuple[float, float]]:
    return [(r.start_time, r.end_time) for r in e2e.run_records(request_id)]


def _versions(e2e: E2E, days: list[str]) -> dict[tuple[str, str], list[str]]:
    return {(asset, day): [v.version_id for v in e2e.catalog.versions_of(asset, day)]
            for asset in [*DATA_ASSETS, REVENUE_ALERT] for day in days}


def test_a_request_publishes_its_good_cells_rejects_the_defect_and_a_none_backfill_recomputes_nothing(stock):
    e2e = stock
    # Production's versions of every day: what keeps serving a day the request's version of is rejected.
    e2e.prepare(DAYS, DATA_ASSETS)
    serving_before = e2e.catalog.current(DAILY_REVENUE, DEFECT_DAY).version_id

    # (a) a CLI request over three days, the defect day's daily_revenue spoilt by its conf.
    first = e2e.create(
        "--assets", ",".join(BATCHABLE), "--from", DAYS[0], "--to", DAYS[-1], "--reprocess", "completed",
        "--max-active", "2", "--partitions-per-run", "1",
        "--conf", json.dumps({DAILY_REVENUE: {"defect_days": {DEFECT_DAY: "drop_rows"}}}),
    )
    a = first["request_id"]
    assert first["concurrency"]["effective"] == 2, first["concurrency"]
    # (c) an overlapping request waits for the first to close, then runs.
    second = e2e.create("--assets", DAILY_REVENUE, "--from", OVERLAP_DAY, "--to", OVERLAP_DAY,
                        "--reprocess", "completed", "--wait-for-overlap")
    b = second["request_id"]
    assert second["status"] == "waiting" and a in second["message"], second

    ended = e2e.wait(a, expect_exit=1, timeout=TIMEOUT)  # done means published: a rejected cell fails it
    assert ended["status"] == "failed", ended
    report = e2e.cli_json("reconcile", a, expect_exit=1)  # not complete: the defect day is rejected
    totals = report["totals"]
    assert report["complete"] is False
    assert (totals["planned"], totals["published"], totals["rejected"], totals["runs_created"]) == (9, 8, 1, 3), totals
    assert (totals["duplicate_publishes"], totals["gaps"], totals["in_flight"], totals["pending"]) == (0, 0, 0, 0)
    cells = {(c["asset"], c["partition_key"]): c["decision"] for c in e2e.show(a)["cells"]}
    assert {cell for cell, decision in cells.items() if decision != "published"} == {(DAILY_REVENUE, DEFECT_DAY)}
    assert cells[(DAILY_REVENUE, DEFECT_DAY)] == "rejected"
    # `completed` re-ran the days production had published: each good cell serves the request's version now.
    good = [(asset, day) for asset in BATCHABLE for day in DAYS if (asset, day) != (DAILY_REVENUE, DEFECT_DAY)]
    assert all(e2e.catalog.current(asset, day).request_id == a for asset, day in good)
    # The rejected version never served: production's version of the day still does.
    assert e2e.catalog.current(DAILY_REVENUE, DEFECT_DAY).version_id == serving_before
    # Each run went through Dagster's own launcher (no warm worker's tag), at most --max-active at once.
    records = e2e.run_records(a)
    assert all(T.RUN_WORKER not in r.dagster_run.tags for r in records)
    assert _overlap(_spans(e2e, a)) <= 2, _spans(e2e, a)

    assert e2e.wait(b, timeout=TIMEOUT)["status"] == "completed"
    assert min(s for s, _ in _spans(e2e, b)) >= max(end for _, end in _spans(e2e, a)), "the requests interleaved"

    # (b) a Dagster job backfill with reprocess none over days that serve a version: nothing computed again.
    before = _versions(e2e, NONE_DAYS)
    launched = subprocess.run(
        [dagster_bin("dagster"), "job", "backfill", "-m", CODE_LOCATION_MODULE, "-j", BACKFILL_JOB,
         "--partitions", ",".join(NONE_DAYS), "--tags", json.dumps({T.REPROCESS: "none"}), "--noprompt"],
        env=dagster_env(), capture_output=True, text=True, timeout=120,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr
    [backfill] = [b for b in e2e.instance.get_backfills() if b.tags.get(T.REPROCESS) == "none"]
    adopted = f"dg-{backfill.backfill_id}"
    poll(lambda: adopted in {r["request_id"] for r in e2e.cli_json("request", "list")}, ADOPTION_TIMEOUT,
         f"{adopted} adopted")
    assert e2e.wait(adopted, timeout=TIMEOUT)["status"] == "completed"
    assert _versions(e2e, NONE_DAYS) == before, "a backfill with reprocess none wrote a version"
    assert all(deliveries(e2e.catalog, day, asset=REVENUE_ALERT) == [] for day in NONE_DAYS)
    report = e2e.cli_json("reconcile", adopted)
    totals = report["totals"]
    assert report["complete"] is True, report
    assert (totals["published"], totals["rejected"], totals["duplicate_publishes"], totals["gaps"]) == (0, 0, 0, 0)
    assert totals["skipped"] == totals["planned"] == len(NONE_DAYS) * len([*DATA_ASSETS, REVENUE_ALERT]), totals
    runs = e2e.instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill.backfill_id}))
    assert sorted(r.tags[T.DAGSTER_PARTITION] for r in runs) == NONE_DAYS
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [(r.run_id, r.status) for r in runs]


# ---- propagation and rollback, after the first request on its days -------------------------------------------

CASCADE_DAY = DAYS[1]  # customer_snapshot's later day (DAYS[2]) is cascaded too: a cumulative snapshot


def _assert_after(e2e: E2E, upstream: tuple[str, str], downstream: tuple[str, str]) -> None:
    """The downstream cell's version read the upstream's new version, and its run (unless the same run, which runs
    its steps in order) started only once that version had been published."""
    up, down = e2e.catalog.current(*upstream), e2e.catalog.current(*downstream)
    assert down.input_versions[f"{upstream[0]}/{upstream[1]}"] == up.version_id, (upstream, down.input_versions)
    if down.dagster_run_id != up.dagster_run_id:
        record = e2e.instance.get_run_record_by_id(down.dagster_run_id)
        assert up.published_at and record is not None and record.start_time is not None, (upstream, downstream)
        assert record.start_time >= datetime.fromisoformat(up.published_at).timestamp(), (upstream, downstream)


def test_a_cascade_runs_downstream_of_its_publish_in_order_and_a_rollback_names_who_read_the_version(stock):
    e2e = stock
    e2e.prepare(DAYS, DATA_ASSETS)  # production serves every day; the snapshot from the calendar's first day
    production = e2e.catalog.current(ORDER_FACTS, CASCADE_DAY).version_id
    rid = e2e.create("--assets", ORDER_FACTS, "--from", CASCADE_DAY, "--to", CASCADE_DAY, "--reprocess", "completed",
                     "--downstream", "cascade", "--partitions-per-run", "1")["request_id"]
    assert e2e.wait(rid, timeout=TIMEOUT)["complete"] is True
    cells = {(c["asset"], c["partition_key"]): (c["origin"], c["decision"]) for c in e2e.show(rid)["cells"]}
    assert cells == {
        (ORDER_FACTS, CASCADE_DAY): ("planned", M.PUBLISHED),
        (DAILY_REVENUE, CASCADE_DAY): ("cascade", M.PUBLISHED),
        (CUSTOMER_SNAPSHOT, CASCADE_DAY): ("cascade", M.PUBLISHED),
        (CUSTOMER_SNAPSHOT, DAYS[2]): ("cascade", M.PUBLISHED),
    }, cells
    assert e2e.run_cells(rid) == set(cells)
    assert all(e2e.catalog.current(asset, day).request_id == rid for asset, day in cells)
    # In order: each downstream cell computed from its upstream's new version, once that version was published.
    _assert_after(e2e, (ORDER_FACTS, CASCADE_DAY), (DAILY_REVENUE, CASCADE_DAY))
    _assert_after(e2e, (ORDER_FACTS, CASCADE_DAY), (CUSTOMER_SNAPSHOT, CASCADE_DAY))
    _assert_after(e2e, (CUSTOMER_SNAPSHOT, CASCADE_DAY), (CUSTOMER_SNAPSHOT, DAYS[2]))

    # The request's order_facts turns out bad: rolled back, production's version serves again, and the rollback
    # names every consumer that read the bad one.
    bad = e2e.catalog.current(ORDER_FACTS, CASCADE_DAY).version_id
    assert e2e.cli("read", ORDER_FACTS, CASCADE_DAY, "--reader", "notebook").exit_code == 0
    rolled = e2e.cli_json("rollback", ORDER_FACTS, CASCADE_DAY, "--reason", "bad fx table")
    assert (rolled["taken_off"], rolled["serving"]) == (bad, production), rolled
    readers = {e2e.catalog.current(asset, CASCADE_DAY).version_id for asset in (DAILY_REVENUE, CUSTOMER_SNAPSHOT)}
    assert {c["consumer"] for c in rolled["consumers"]} == readers | {"external:notebook"}, rolled["consumers"]
    assert e2e.catalog.current(ORDER_FACTS, CASCADE_DAY).version_id == production
    states = {v.version_id: v.state for v in e2e.catalog.versions_of(ORDER_FACTS, CASCADE_DAY)}
    assert (states[bad], states[production]) == ("ROLLED_BACK", "PUBLISHED")
    # Dagster's own event log says so: the day's latest materialization names the version serving again.
    assert rolled["dagster_event"] == f"recorded a runless materialization of {production}"
    latest = e2e.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(ORDER_FACTS), asset_partitions=[CASCADE_DAY]), limit=1
    ).records[0]
    assert latest.asset_materialization.metadata["version_id"].value == production
    report = e2e.cli_json("reconcile", rid, expect_exit=1)  # a rolled-back cell: no longer complete
    assert (report["complete"], report["totals"]["rolled_back"]) == (False, 1), report["totals"]


# ---- reprocess policies, frozen requests ------------------------------------------------------------------------

# Per policy: a day of order_facts serving a published version, then a day whose latest attempt was rejected.
POLICY_DAYS = {"failed": ["2022-09-04", "2022-09-05"], "completed": ["2022-09-06", "2022-09-07"]}
RECOMPUTED = {"failed": {"2022-09-05"}, "completed": {"2022-09-06", "2022-09-07"}}
def test_reprocess_failed_reruns_only_the_rejected_day_and_completed_every_day_as_the_dry_run_said(stock):
    e2e = stock
    published = [days[0] for days in POLICY_DAYS.values()]
    rejected = [days[1] for days in POLICY_DAYS.values()]
    e2e.prepare(published + rejected, [RAW_ORDERS])
    e2e.prepare(published, [ORDER_FACTS])
    e2e.prepare(rejected, [ORDER_FACTS], run_config_for={d: DROP_ROWS for d in rejected}, expect_success=False)
    before = order_facts_versions(e2e, published + rejected)

    plans, requests = {}, {}
    for policy, days in POLICY_DAYS.items():
        args = ("--assets", ORDER_FACTS, "--from", days[0], "--to", days[-1], "--reprocess", policy,
                "--partitions-per-run", "1")
        plans[policy] = {c["partition_key"]: (c["action"], c["reason"]) for c in e2e.dry_run(*args)}
        assert {d for d, (action, _) in plans[policy].items() if action == "create"} == RECOMPUTED[policy], plans
        created = e2e.create(*args)
        assert (created["status"], created["code_version"]) == ("open", CODE_VERSION), created
        requests[policy] = created["request_id"]

    for policy, rid in requests.items():
        assert e2e.wait(rid, timeout=TIMEOUT)["status"] == "completed"
        shown = e2e.show(rid)
        # Frozen: its cells are the days it was created over, its runs carry its code version and its policy.
        frozen = [(ORDER_FACTS, d) for d in POLICY_DAYS[policy]]
        assert [(c["asset"], c["partition_key"]) for c in shown["cells"]] == frozen
        assert e2e.run_cells(rid) == {(ORDER_FACTS, d) for d in RECOMPUTED[policy]}
        for record in e2e.run_records(rid):
            tags = record.dagster_run.tags
            assert (tags[T.REQUEST_ID], tags[T.CODE_VERSION], tags[T.REPROCESS]) == (rid, CODE_VERSION, policy)
        after = order_facts_versions(e2e, POLICY_DAYS[policy])
        for cell in shown["cells"]:
            day = cell["partition_key"]
            if day in RECOMPUTED[policy]:
                serving = e2e.catalog.current(ORDER_FACTS, day)
                assert cell["decision"] == M.PUBLISHED and serving.request_id == rid, (policy, cell)
                assert after[day] == [*before[day], serving.version_id], (policy, day)
            else:  # left alone for the dry run's reason, nothing written
                assert (cell["decision"], cell["reason"]) == ("skipped", plans[policy][day][1]), (policy, cell)
                assert after[day] == before[day], (policy, day)
        totals = e2e.cli_json("reconcile", rid)["totals"]
        recomputed = len(RECOMPUTED[policy])
        assert (totals["published"], totals["skipped"], totals["duplicate_publishes"], totals["gaps"]) == (
            recomputed, len(POLICY_DAYS[policy]) - recomputed, 0, 0), (policy, totals)


BLOCK_DAY = "2022-09-17"


def test_a_request_frozen_under_other_code_is_blocked_and_submits_nothing(stock):
    e2e = stock
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BACKFILL_CODE_VERSION", "other-code")
        created = e2e.create("--assets", RAW_ORDERS, "--from", BLOCK_DAY, "--to", BLOCK_DAY)
    rid = created["request_id"]
    assert created["code_version"] == "other-code"
    try:
        assert e2e.wait(rid, expect_exit=1, timeout=TIMEOUT)["status"] == "blocked"
        shown = e2e.show(rid)
        assert f"code version changed (frozen other-code, loaded {CODE_VERSION})" in shown["message"], shown
        assert [c["decision"] for c in shown["cells"]] == [M.PENDING]
        assert e2e.run_records(rid) == []
    finally:
        assert e2e.cli_json("request", "cancel", rid)["status"] == "cancelled"
