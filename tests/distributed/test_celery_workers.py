"""A backfill request whose steps run on two Celery workers that share no folder: every cell is
published exactly once, by a worker, reads verify, the request reconciles exactly. A worker killed mid-step:
tests/distributed/test_worker_kills.py."""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.distributed.checks import REQUEST_TIMEOUT, assert_published_exactly_once, assert_reconciles_exactly
from tests.distributed.conftest import WORKER_NAMES
from tests.orders import CALENDAR

pytestmark = [pytest.mark.postgres, pytest.mark.daemon]



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
