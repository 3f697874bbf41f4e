"""A step that kills every Celery worker that runs it is delivered a bounded number of times, then its cell fails
saying why (engine/wap/redelivery.py). Without the bound the broker's late acknowledgement hands the step to the
next worker for ever.

One 1-day ``raw_orders`` request whose day is given the ``kill_worker`` defect: the step SIGKILLs its worker, so
the first delivery takes down one worker and the second the other (the default limit is 2 lost workers), each
replaced by a new one as soon as it is seen dead; the third delivery is refused before it computes anything, the
run fails, the cell fails with the reason, and both attempts the killed deliveries began are abandoned (nothing
left for reconcile to repair). The same for a batched (chunk) run of two days whose first day kills the worker:
its step is bounded too, the day fails with the reason and the other day is published by a run of its own.
"""

from __future__ import annotations

import json

import dagster as dg
import pytest

from backfill_assets.defects import Defect, defect_conf
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.wap.redelivery import DEFAULT_WORKER_LOSS_LIMIT
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.integration.assets.chunks import CHUNK_JOB, op_name
from tests.distributed.checks import REQUEST_TIMEOUT, request_versions
from tests.distributed.conftest import WORKER_NAMES
from tests.e2e.conftest import poll

pytestmark = [pytest.mark.postgres, pytest.mark.daemon]

DAY = "2022-10-28"  # no other test of the package requests these days
CHUNK_DAYS = ("2022-10-29", "2022-10-30")
KILLED_TIMEOUT = 120.0
REFUSAL = f"lost its worker {DEFAULT_WORKER_LOSS_LIMIT} time(s)"


def run_ended(stack, request_id: str) -> bool:
    return any(r.dagster_run.is_finished for r in stack.run_records(request_id))


def dead_workers(stack) -> list[str]:
    return [name for name, worker in stack.workers.items() if not worker.alive()]


def _request_killing_workers(stack, first: str, last: str, conf: str, *extra: str) -> str:
    """Create the request and replace each worker its step kills, until the bound's worth of workers died."""
    try:
        request_id = stack.create("--assets", RAW_ORDERS, "--from", first, "--to", last, "--reprocess", "completed",
                                  "--conf", conf, *extra)["request_id"]
        # Each dead worker is replaced as soon as it is seen dead (a new machine with the same name), so a
        # replacement starts while the next delivery kills the other worker; the third delivery runs on one.
        killed = 0
        while killed < DEFAULT_WORKER_LOSS_LIMIT:
            dead = poll(lambda: dead_workers(stack) or run_ended(stack, request_id), KILLED_TIMEOUT,
                        "the step to kill a worker")
            assert dead is not True, f"the run ended after {killed} worker(s) killed"
            killed += len(dead)
            stack.start_workers(dead)
    finally:
        stack.start_workers(dead_workers(stack))  # the next test has two workers, also after a failure here
    return request_id


def test_a_step_that_kills_its_worker_is_delivered_a_bounded_number_of_times_then_its_cell_fails(celery_stack):
    stack = celery_stack
    assert DEFAULT_WORKER_LOSS_LIMIT == len(WORKER_NAMES)  # each killed delivery takes one of the two workers
    serving = stack.catalog.current(RAW_ORDERS, DAY)
    conf = json.dumps({RAW_ORDERS: defect_conf({DAY: Defect.kill_worker})})
    request_id = _request_killing_workers(stack, DAY, DAY, conf)
    out = stack.wait(request_id, expect_exit=1, timeout=REQUEST_TIMEOUT)
    assert out["status"] == M.REQUEST_FAILED, out  # a day failed: not done

    # The cell failed, saying why; the day still serves what it served before.
    [cell] = stack.show(request_id)["cells"]
    assert cell["decision"] == M.FAILED and REFUSAL in cell["reason"], cell
    report = stack.cli_json("reconcile", request_id, expect_exit=1)
    assert report["totals"]["gaps"] == 0 and report["totals"]["failed"] == 1, report["totals"]
    [reported] = report["cells"]
    assert REFUSAL in reported["versions"][-1]["error"] and REFUSAL in reported["reason"], reported
    current = stack.catalog.current(RAW_ORDERS, DAY)
    assert (current and current.version_id) == (serving and serving.version_id)

    # Two deliveries began an attempt each and died with their worker; neither is left in progress.
    attempts = sorted(request_versions(stack, request_id), key=lambda v: v.attempt_no)
    assert [(v.attempt_no, v.state) for v in attempts] == [
        (1, VersionState.ABANDONED.value), (2, VersionState.ABANDONED.value)
    ], [(v.version_id, v.state, v.worker, v.error) for v in attempts]
    assert {v.worker for v in attempts} <= set(WORKER_NAMES)
    assert REFUSAL in attempts[-1].error and "not delivered again" in attempts[-1].error

    # Dagster: one run, three starts of the step (two lost), one failure with the reason, run FAILURE.
    [run] = stack.run_records(request_id)
    assert run.dagster_run.status == dg.DagsterRunStatus.FAILURE
    events = stack.instance.all_logs(run.dagster_run.run_id, of_type={
        dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.STEP_SUCCESS})
    kinds = [e.dagster_event.event_type for e in events if e.step_key == RAW_ORDERS]
    assert kinds.count(dg.DagsterEventType.STEP_START) == DEFAULT_WORKER_LOSS_LIMIT + 1, kinds
    assert kinds[-1] == dg.DagsterEventType.STEP_FAILURE and dg.DagsterEventType.STEP_SUCCESS not in kinds, kinds
    [failure] = [e for e in events if e.dagster_event.event_type == dg.DagsterEventType.STEP_FAILURE]
    assert REFUSAL in failure.dagster_event.step_failure_data.error.message


def test_a_batched_runs_step_that_kills_its_worker_is_bounded_too(celery_stack):
    # Two days in one chunk run: its raw_orders op starts with the first day, which kills the worker each time.
    stack = celery_stack
    conf = json.dumps({RAW_ORDERS: defect_conf({CHUNK_DAYS[0]: Defect.kill_worker})})
    request_id = _request_killing_workers(stack, *CHUNK_DAYS, conf, "--partitions-per-run", "2", "--max-active", "1")
    out = stack.wait(request_id, expect_exit=1, timeout=REQUEST_TIMEOUT)
    assert out["status"] == M.REQUEST_FAILED, out  # a day failed: not done
    # The killing day fails with the reason; the other day, which the chunk never reached, is run again and
    # published by a run of its own.
    cells = {c["partition_key"]: c for c in stack.show(request_id)["cells"]}
    killing, other = cells[CHUNK_DAYS[0]], cells[CHUNK_DAYS[1]]
    assert killing["decision"] == M.FAILED and REFUSAL in killing["reason"], killing
    assert other["decision"] == M.PUBLISHED and other["dagster_run_id"] != killing["dagster_run_id"], other
    attempts = [v for v in request_versions(stack, request_id) if v.partition_key == CHUNK_DAYS[0]]
    assert {v.state for v in attempts} == {VersionState.ABANDONED.value}, [(v.version_id, v.state) for v in attempts]
    chunk_run = stack.instance.get_run_by_id(killing["dagster_run_id"])
    assert (chunk_run.job_name, chunk_run.status) == (CHUNK_JOB, dg.DagsterRunStatus.FAILURE)
    events = stack.instance.all_logs(chunk_run.run_id, of_type={dg.DagsterEventType.STEP_START})
    starts = [e for e in events if e.step_key == op_name(RAW_ORDERS)]
    assert len(starts) == DEFAULT_WORKER_LOSS_LIMIT + 1, [e.step_key for e in events]
