"""Fault class ``distributed.worker_killed``: a Celery worker SIGKILLed after its write and checks, before the
publish, with the steps on two workers that share no folder (the stack of tests/distributed).

Each trial is a 1-day ``raw_orders`` request. Both workers hold after their checks (a hold file each): whichever
took the step is killed, the other's hold is lifted, and the broker's redelivery must finish the step there as
attempt 2 of the same logical run. Per trial: nothing lost (the cell published), nothing duplicated (one published
version, one Dagster run), nothing partial (the pointer names the complete attempt, whose file verifies; the dead
attempt is ABANDONED and unserved), reconcile exact and showing both attempts with their workers.
"""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.storage import Warehouse
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
from tests.orders import CALENDAR
from tests.reliability import mode
from tests.reliability.publish_counts import count_publishes

pytestmark = [pytest.mark.postgres, pytest.mark.daemon]

# The figure is 10 kills (`make reliability`); `make test` runs one.
TRIALS = mode.trials_of(slow=10, normal=1)
HELD_TIMEOUT = 120.0
FIRST_DAY = "2022-10-12"


def kill_the_worker_holding(stack, day: str) -> tuple[str, str, str, object]:
    """Request ``day``, kill whichever worker holds it before the publish; (request, victim, survivor, dead)."""
    for name in WORKER_NAMES:
        stack.hold_file(name).touch()
    try:
        request_id = stack.create("--assets", RAW_ORDERS, "--from", day, "--to", day,
                                  "--reprocess", "completed")["request_id"]
        dead = poll(lambda: held_attempt(stack, day), HELD_TIMEOUT, f"a worker holding {RAW_ORDERS} {day}")
        victim = dead.worker
        survivor = next(n for n in WORKER_NAMES if n != victim)
        stack.hold_file(survivor).unlink()
        stack.workers[victim].kill()
        out = stack.wait(request_id, timeout=REQUEST_TIMEOUT)
    finally:
        for name in WORKER_NAMES:
            stack.hold_file(name).unlink(missing_ok=True)
    assert out["status"] == M.COMPLETED, out
    return request_id, victim, survivor, dead


def assert_step_finished_once_on_the_survivor(stack, klass, request_id, day, victim, survivor, dead) -> None:
    counts = count_publishes(stack, [request_id], [(RAW_ORDERS, day)])
    for name, n in counts.as_tallies().items():
        klass.tally(name, n)
    assert (counts.lost, counts.duplicated, counts.partial, counts.stuck) == (0, 0, [], []), counts
    [published] = assert_published_exactly_once(stack, request_id, {(RAW_ORDERS, day)})
    attempts = sorted(request_versions(stack, request_id), key=lambda v: v.attempt_no)
    assert [(v.attempt_no, v.worker, v.state) for v in attempts] == [
        (1, victim, VersionState.ABANDONED.value), (2, survivor, VersionState.PUBLISHED.value)
    ], [(v.version_id, v.worker, v.state, v.error) for v in attempts]
    # One logical run: the redelivered step is the same Dagster run's next attempt, and the run succeeded.
    assert (published.logical_run_id, published.dagster_run_id) == (dead.logical_run_id, dead.dagster_run_id)
    [run] = stack.run_records(request_id)
    assert run.dagster_run.status == dg.DagsterRunStatus.SUCCESS
    # The dead attempt's object is in the bucket, complete or not, and nothing serves it.
    assert Warehouse(stack.settings.warehouse_root).read_bytes(dead.path)
    read = stack.cli_json("read", RAW_ORDERS, day)
    assert read["version_id"] == published.version_id != dead.version_id
    report = assert_reconciles_exactly(stack, request_id, 1)
    assert report["totals"]["attempts"] == 2, report["totals"]
    [cell] = report["cells"]
    assert [(v["attempt_no"], v["worker"], v["state"]) for v in cell["versions"]] == [
        (1, victim, VersionState.ABANDONED.value), (2, survivor, VersionState.PUBLISHED.value)
    ]


@pytest.mark.timeout(mode.timeout(per_trial_seconds=90, fixed_seconds=180, trials=TRIALS))
def test_a_worker_killed_after_its_write_before_the_publish_hands_the_step_to_the_other(celery_stack, trials):
    stack = celery_stack
    days = CALENDAR.keys_between(FIRST_DAY, "2022-10-31")[:TRIALS]
    victims = []
    with trials("distributed.worker_killed") as klass:
        for day in days:
            with klass.trial(day):
                request_id, victim, survivor, dead = kill_the_worker_holding(stack, day)
                victims.append(victim)
                assert_step_finished_once_on_the_survivor(stack, klass, request_id, day, victim, survivor, dead)
            # A new machine in the dead one's place (also after a failed trial), for the next trial.
            stack.start_workers([name for name, worker in stack.workers.items() if not worker.alive()])
        klass.note(f"killed: {', '.join(f'{v} x{victims.count(v)}' for v in sorted(set(victims)))}")
    assert klass.result.trials == len(days) > 0
