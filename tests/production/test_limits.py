"""The instance a team runs: production keeps priority, the source pool and per-request limits hold,
and a whole request completes on both storages."""

from __future__ import annotations

import os
import subprocess
import time

import dagster as dg

from backfill_assets.cli.daemon import CODE_LOCATION_MODULE, dagster_bin
from backfill_assets.core import tags as T
from backfill_assets.core.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.defs.jobs import PRODUCTION_JOB


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    live = peak = 0
    for _, delta in events:  # an end at the same instant as a start sorts first (-1 < 1)
        live += delta
        peak = max(peak, live)
    return peak


def _run_intervals(instance: dg.DagsterInstance, request_id: str) -> list[tuple[float, float]]:
    records = instance.get_run_records(dg.RunsFilter(tags={T.REQUEST_ID: request_id}))
    return [(r.start_time, r.end_time) for r in records if r.start_time and r.end_time]


def _step_intervals(instance: dg.DagsterInstance, run_ids: list[str], step: str) -> list[tuple[float, float]]:
    intervals = []
    for run_id in run_ids:
        start = end = None
        for event in instance.all_logs(run_id):
            if event.step_key != step or not event.is_dagster_event:
                continue
            kind = event.dagster_event.event_type_value
            if kind == "STEP_START":
                start = event.timestamp
            elif kind in ("STEP_SUCCESS", "STEP_FAILURE"):
                end = event.timestamp
        if start and end:
            intervals.append((start, end))
    return intervals


def test_whole_request_completes_and_reconciles(prod):
    rid = prod.create("--assets", f"{RAW_ORDERS},{ORDER_FACTS},{DAILY_REVENUE}", "--from", "2022-09-01",
                      "--to", "2022-09-04", "--reprocess", "completed", "--max-active", "2")
    assert prod.wait(rid)["complete"] is True
    report = prod.cli_json("reconcile", rid)
    t = report["totals"]
    assert report["complete"] is True and (t["planned"], t["published"], t["runs_created"], t["gaps"]) == (12, 12, 4, 0)
    assert t["duplicate_publishes"] == 0 and t["rejected"] == 0


def test_source_pool_and_per_request_limit_hold_even_when_the_driver_over_submits(prod):
    # --max-active 6: the driver submits six runs at once; the instance's per-request tag limit (2) and the
    # source_system pool (1) must still hold.
    rid = prod.create("--assets", RAW_ORDERS, "--from", "2022-09-05", "--to", "2022-09-10",
                      "--reprocess", "completed", "--max-active", "6")
    assert prod.wait(rid)["complete"] is True
    runs = _run_intervals(prod.instance, rid)
    assert len(runs) == 6
    assert _max_overlap(runs) <= 2, runs
    run_ids = [r.dagster_run.run_id for r in prod.instance.get_run_records(dg.RunsFilter(tags={T.REQUEST_ID: rid}))]
    steps = _step_intervals(prod.instance, run_ids, RAW_ORDERS)
    assert len(steps) == 6
    assert _max_overlap(steps) == 1, steps


def test_production_run_starts_before_queued_backfill_runs(prod):
    rid = prod.create("--assets", RAW_ORDERS, "--from", "2022-09-11", "--to", "2022-09-16",
                      "--reprocess", "completed", "--max-active", "6")
    # Wait until the driver has queued its six runs, then launch production for another day.
    deadline = time.monotonic() + 60
    while len(prod.instance.get_runs(dg.RunsFilter(tags={T.REQUEST_ID: rid}))) < 6:
        assert time.monotonic() < deadline, "the driver did not submit six runs"
        time.sleep(0.5)
    subprocess.run(
        [dagster_bin("dagster"), "job", "launch", "-m", CODE_LOCATION_MODULE, "-j", PRODUCTION_JOB,
         "--tags", '{"dagster/partition": "2022-09-18"}'],
        env=dict(os.environ), check=True, capture_output=True, timeout=120,
    )
    [production] = prod.instance.get_run_records(dg.RunsFilter(job_name=PRODUCTION_JOB, tags={T.DAGSTER_PARTITION: "2022-09-18"}))
    assert production.dagster_run.tags[T.LANE] == T.LANE_PRODUCTION
    assert prod.wait(rid)["complete"] is True
    production = prod.instance.get_run_record_by_id(production.dagster_run.run_id)
    backfill = prod.instance.get_run_records(dg.RunsFilter(tags={T.REQUEST_ID: rid}))
    waiting = [r for r in backfill if r.start_time and r.start_time > production.create_timestamp.timestamp()]
    assert waiting, "some backfill runs were still queued when production was submitted"
    assert production.start_time is not None
    assert all(production.start_time <= r.start_time for r in waiting), (
        production.start_time, sorted(r.start_time for r in waiting))
