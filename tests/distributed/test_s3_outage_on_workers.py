"""The S3 endpoint down while a Celery worker is mid-step (faults across machines).

A worker holds a 1-day ``raw_orders`` step after its write, before its checks read the object back; the endpoint
goes down and the hold is lifted. The integrity check cannot read: the attempt is abandoned, Dagster's retry
policy sends the step back through the broker (to either worker), and the retries meet the outage too. The run
fails with an error that names the storage, nothing is published or half-published, and once the endpoint is back
`request create --reprocess failed` publishes the day exactly once. The single-machine variant with its counts per
trial is tests/reliability/test_s3_outage.py.
"""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import RAW_ORDERS
from tests.distributed.checks import (
    REQUEST_TIMEOUT,
    assert_published_exactly_once,
    assert_reconciles_exactly,
    held_attempt,
    request_versions,
)
from tests.distributed.conftest import WORKER_NAMES
from tests.e2e.conftest import poll
from tests.reliability.publish_counts import count_publishes

pytestmark = [pytest.mark.postgres, pytest.mark.daemon]

DAY = "2022-10-27"
HELD_TIMEOUT = 120.0
STORAGE_NAMED = "warehouse storage"


def step_failures(stack, run_id: str) -> list[str]:
    """Each STEP_FAILURE's error with its causes, as the UI shows it (the last one reads "Exceeded max_retries",
    caused by the attempt's own error)."""
    failures = []
    for event in stack.instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        error, chain = event.dagster_event.step_failure_data.error, []
        while error is not None:
            chain.append(error.message.strip())
            error = error.cause
        failures.append(" <- ".join(chain))
    return failures


def test_s3_down_mid_step_on_a_worker_fails_cleanly_and_reprocess_failed_publishes_the_day_once(celery_stack):
    stack = celery_stack
    for name in WORKER_NAMES:
        stack.hold_file(name).touch()
    try:
        request_id = stack.create("--assets", RAW_ORDERS, "--from", DAY, "--to", DAY,
                                  "--reprocess", "completed")["request_id"]
        poll(lambda: held_attempt(stack, DAY), HELD_TIMEOUT, f"a worker holding {RAW_ORDERS} {DAY}")
        with stack.proxy.outage():
            for name in WORKER_NAMES:
                stack.hold_file(name).unlink()
            out = stack.wait(request_id, expect_exit=1, timeout=REQUEST_TIMEOUT)
    finally:
        for name in WORKER_NAMES:
            stack.hold_file(name).unlink(missing_ok=True)
    # The request closed (its one cell failed): `wait` says so with exit 1 and complete false.
    assert out["complete"] is False and out["counts"]["failed"] == 1, out
    [cell] = Ledger(stack.catalog).cells(request_id)
    assert cell.decision == M.FAILED, (cell.decision, cell.reason)
    # Every attempt (the held one and the retries) was abandoned, each saying the storage failed; none published.
    attempts = request_versions(stack, request_id)
    assert len(attempts) >= 2, [(v.version_id, v.state) for v in attempts]
    assert {v.state for v in attempts} == {VersionState.ABANDONED.value}, [(v.version_id, v.state) for v in attempts]
    assert all(STORAGE_NAMED in (v.error or "") for v in attempts), [v.error for v in attempts]
    assert stack.catalog.current(RAW_ORDERS, DAY) is None
    [run] = stack.run_records(request_id)
    assert run.dagster_run.status == dg.DagsterRunStatus.FAILURE
    failures = step_failures(stack, run.dagster_run.run_id)
    assert failures and all(STORAGE_NAMED in message for message in failures), failures

    # The endpoint is back: what a user does.
    retry_id = stack.create("--assets", RAW_ORDERS, "--from", DAY, "--to", DAY, "--reprocess", "failed")["request_id"]
    assert stack.wait(retry_id, timeout=REQUEST_TIMEOUT)["status"] == M.COMPLETED
    assert_published_exactly_once(stack, retry_id, {(RAW_ORDERS, DAY)})
    assert_reconciles_exactly(stack, retry_id, 1)
    counts = count_publishes(stack, [request_id, retry_id], [(RAW_ORDERS, DAY)])
    assert (counts.lost, counts.duplicated, counts.partial, counts.stuck) == (0, 0, [], []), counts
