"""Every promise on a stock instance: Dagster's own classes only, as on Kubernetes, Docker, ECS or Dagster+.

The home's dagster.yaml names Dagster's ``QueuedRunCoordinator`` with its defaults (a dequeue every 5 s), no run
launcher (Dagster's ``DefaultRunLauncher``: a new process per run, through the code server), no storage block
(Dagster's SQLite classes) and no sensors block; what it copies from the shipped file is plain Dagster config: the
``concurrency`` block (the run queue's tag limits and the pools) and ``run_monitoring``. The daemon is Dagster's own
``dagster-daemon run``: no wake-ups, no warm worker, no lease; sensors every ~5 s.

On it, with the orders example: a CLI request over three days publishes every good cell and rejects the defect day
(its previous version keeps serving, reconcile exact) within ``--max-active``; an overlapping request waits and
never interleaves; and a Dagster job backfill tagged ``backfill/reprocess=none`` over those published days
recomputes nothing.
"""

from __future__ import annotations

import json
import subprocess

import dagster as dg
import pytest
from dagster._core.launcher import DefaultRunLauncher
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster._core.storage.event_log import SqliteEventLogStorage
from dagster._core.storage.runs import SqliteRunStorage
from dagster._core.storage.schedules import SqliteScheduleStorage

from backfill_assets.cli.daemon import dagster_bin
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

from .conftest import E2E, home_under_dagster_daemon, poll
from .services import dagster_env

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("e2e/test_stock_instance")]

SEED_FROM, SEED_TO = "2022-09-01", "2022-09-03"
DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]
DEFECT_DAY = "2022-09-02"
OVERLAP_DAY = DAYS[-1]  # the overlapping request's one day, the first request's last
NONE_DAYS = DAYS[:2]  # the reprocess-none backfill's: a day the request published, the rejected defect day
BATCHABLE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
DATA_ASSETS = [*BATCHABLE, CUSTOMER_SNAPSHOT]  # customer_snapshot depends on the past: from the calendar's first day
# Dagster's timers set the pace here: a driver pass every ~5 s, a dequeue every 5 s, a new process per run.
TIMEOUT = "150"
ADOPTION_TIMEOUT = 90.0


@pytest.fixture(scope="module")
def stock(tmp_path_factory: pytest.TempPathFactory):
    """Dagster's own ``dagster-daemon run`` on a home of Dagster's own classes."""
    yield from home_under_dagster_daemon(tmp_path_factory, "stock", True, (SEED_FROM, SEED_TO))


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
    [backfill] = e2e.instance.get_backfills()
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
