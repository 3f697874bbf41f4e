"""Backfill requests whose steps run on two Celery workers that share no folder (issue 14).

Every cell is published exactly once, reads verify, the request reconciles exactly; a worker SIGKILLed after
its write and checks, before the publish, hands the step to the other worker: a new attempt of the same logical
run publishes once, the dead attempt's object is never visible and reconcile shows the retry.
"""

from __future__ import annotations

import dagster as dg
import pytest
import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.schema import versions
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.distributed.conftest import WORKER_NAMES
from tests.e2e.conftest import poll
from tests.orders import CALENDAR

pytestmark = [pytest.mark.postgres, pytest.mark.daemon, pytest.mark.timeout(420)]

REQUEST_TIMEOUT = "300"
HELD_TIMEOUT = 120.0


def request_versions(stack, request_id: str) -> list:
    return stack.catalog.versions_where(versions.c.request_id == request_id)


def assert_published_exactly_once(stack, request_id: str, cells: set[tuple[str, str]]) -> list:
    """Each cell: one PUBLISHED version of this request, the one the pointer serves; returns those versions."""
    mine = request_versions(stack, request_id)
    published = [v for v in mine if v.state == VersionState.PUBLISHED.value]
    assert sorted((v.asset, v.partition_key) for v in published) == sorted(cells), [
        (v.version_id, v.state, v.error) for v in mine
    ]
    for version in published:
        assert stack.catalog.current(version.asset, version.partition_key).version_id == version.version_id
    return published


def assert_reconciles_exactly(stack, request_id: str, cells: int) -> dict:
    report = stack.cli_json("reconcile", request_id, "--verify-files")
    totals = report["totals"]
    assert report["complete"] is True, report
    assert (totals["published"], totals["duplicate_publishes"], totals["gaps"]) == (cells, 0, 0), totals
    return report


def test_a_request_on_two_workers_publishes_every_cell_once_reads_verify_and_reconciles(celery_stack):
    stack = celery_stack
    days = ("2022-10-01", "2022-10-08")
    assets = (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE)
    request_id = stack.create("--assets", ",".join(assets), "--from", days[0], "--to", days[1],
                              "--max-active", "2", "--reprocess", "completed")["request_id"]
    out = stack.wait(request_id, timeout=REQUEST_TIMEOUT)
    assert out["status"] == M.COMPLETED, out
    cells = {(a, k) for a in assets for k in CALENDAR.keys_between(*days)}
    published = assert_published_exactly_once(stack, request_id, cells)
    # Every step ran on a Celery worker, none in the daemon's run process.
    assert {v.worker for v in published} <= set(WORKER_NAMES), {v.version_id: v.worker for v in published}
    for run in stack.run_records(request_id):
        delegated = [
            e for e in stack.instance.all_logs(run.dagster_run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
            if "in celery worker" in (e.message or "")
        ]
        assert delegated, f"run {run.dagster_run.run_id} ran no step on a Celery worker"
    assert_reconciles_exactly(stack, request_id, len(cells))
    # The versions are objects in the bucket, read back by sha256 through the CLI.
    serving = stack.catalog.current(DAILY_REVENUE, days[1])
    assert serving.path.startswith("s3://")
    assert len(Warehouse(stack.settings.warehouse_root).read_verified(serving.path, serving.sha256, serving.rows))
    read = stack.cli_json("read", DAILY_REVENUE, days[1])
    assert read["version_id"] == stack.catalog.current(DAILY_REVENUE, days[1]).version_id
    # No folder carried data: the daemon's home and the workers' homes hold configuration and logs only.
    assert not (stack.home / "warehouse").exists() and not (stack.home / "storage").exists()
    for name in WORKER_NAMES:
        worker_home = stack.root / "workers" / name
        assert not any((worker_home / "cwd").iterdir())
        assert {p.name for p in worker_home.iterdir()} <= {"cwd", "dagster.yaml", "celery.yaml", "worker.log",
                                                           "dagster_celery"}


def held_attempt(stack, asset: str, day: str):
    """The attempt of (asset, day) that a worker holds after its checks: (version, worker name), or None."""
    rows = stack.catalog.versions_where(
        sa.and_(versions.c.asset == asset, versions.c.partition_key == day,
                versions.c.state == VersionState.VERIFYING.value)
    )
    return (rows[0], rows[0].worker) if rows else None


def test_a_worker_killed_after_its_write_before_the_publish_hands_the_step_to_the_other_worker(celery_stack):
    stack = celery_stack
    day = "2022-10-20"
    for name in WORKER_NAMES:
        stack.hold_file(name).touch()
    try:
        request_id = stack.create("--assets", RAW_ORDERS, "--from", day, "--to", day,
                                  "--reprocess", "completed")["request_id"]
        dead_version, victim = poll(lambda: held_attempt(stack, RAW_ORDERS, day), HELD_TIMEOUT,
                                    f"a worker holding {RAW_ORDERS} {day} after its checks")
        survivor = next(n for n in WORKER_NAMES if n != victim)
        stack.hold_file(survivor).unlink()
        stack.workers[victim].kill()
        out = stack.wait(request_id, timeout=REQUEST_TIMEOUT)
    finally:
        for name in WORKER_NAMES:
            stack.hold_file(name).unlink(missing_ok=True)
    assert out["status"] == M.COMPLETED, out
    [published] = assert_published_exactly_once(stack, request_id, {(RAW_ORDERS, day)})
    attempts = sorted(request_versions(stack, request_id), key=lambda v: v.attempt_no)
    assert [(v.attempt_no, v.worker, v.state) for v in attempts] == [
        (1, victim, VersionState.ABANDONED.value), (2, survivor, VersionState.PUBLISHED.value)
    ]
    # One logical run: the redelivered step is the same Dagster run's next attempt.
    assert published.logical_run_id == dead_version.logical_run_id
    assert published.dagster_run_id == dead_version.dagster_run_id
    [run] = stack.run_records(request_id)
    assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    # The dead attempt's object is in the bucket, but nothing serves it.
    assert Warehouse(stack.settings.warehouse_root).read_bytes(dead_version.path)
    read = stack.cli_json("read", RAW_ORDERS, day)
    assert read["version_id"] == published.version_id != dead_version.version_id
    report = assert_reconciles_exactly(stack, request_id, 1)
    assert report["totals"]["attempts"] == 2, report["totals"]
    [cell] = report["cells"]
    assert [(v["attempt_no"], v["worker"], v["state"]) for v in cell["versions"]] == [
        (1, victim, VersionState.ABANDONED.value), (2, survivor, VersionState.PUBLISHED.value)
    ]
    stack.start_worker(victim)  # a new machine in its place, for the tests after this one
