"""What wakes backfill-assets-daemon's loops (``integration/runs/waker.py``), on a real instance: the wake-up file,
a run that finishes, a run submitted in the daemon's process; the spacing, retry-until-served and backstop rules; and a
request created while driver ticks run back to back submits each cell once."""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict

import dagster as dg
import pytest

from backfill_assets import backfills_for_instance
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.wakeup import wake_daemon, wakeup_stamp
from backfill_assets.examples.orders.domain import DAILY_REVENUE, RAW_ORDERS
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.dagster_adapter import sensors_pending_since
from backfill_assets.integration.runs.waker import Waker
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from backfill_assets.service import RequestInput
from tests.orders import DEFS, MODULE, run_partitions

# A wait's timeout: a loop that was not woken waits this long, which no wake-up below may take.
LONG = 60.0
# How soon after the event a loop must have woken (the waker reads its signals every 0.02 s here).
WOKEN_WITHIN = 10.0


@pytest.fixture
def waker(env):
    made = Waker(env.instance, env.home, poll_seconds=0.02).start()
    yield made
    made.stop()


def timed_wait(waker: Waker, channel: str, timeout: float = LONG, shutdown: threading.Event | None = None):
    started = time.monotonic()
    stopped = waker.wait(shutdown or threading.Event(), timeout, channel)
    return stopped, time.monotonic() - started


def later(seconds: float, action) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()))
    thread.start()
    return thread


def test_touching_the_wakeup_file_wakes_a_waiting_loop(env, waker):
    before = wakeup_stamp(env.home)
    thread = later(0.3, lambda: wake_daemon(env.home))
    stopped, waited = timed_wait(waker, "sensor")
    thread.join()
    assert not stopped and waited < WOKEN_WITHIN
    assert wakeup_stamp(env.home) != before


def test_a_run_that_finishes_wakes_a_waiting_loop(env, waker):
    woke: list[float] = []
    waiter = threading.Thread(target=lambda: (waker.wait(threading.Event(), LONG, "backfill"),
                                               woke.append(time.monotonic())))
    waiter.start()
    # A run of the orders code location on this instance, as any launcher on any host would record it.
    [run] = run_partitions(env.instance, ["2022-09-01"], assets=[RAW_ORDERS])
    finished = time.monotonic()
    waiter.join()
    assert run.success
    assert woke[0] - finished < WOKEN_WITHIN  # woken by the run's end, not by the timeout


def test_a_run_submitted_in_the_daemon_process_wakes_the_run_queue_at_once(env, waker):
    thread = later(0.3, waker.notify)
    stopped, waited = timed_wait(waker, "queue")
    thread.join()
    assert not stopped and waited < WOKEN_WITHIN


def test_nothing_new_means_the_loop_waits_its_whole_timeout(env, waker):
    stopped, waited = timed_wait(waker, "sensor", timeout=1.0)
    assert not stopped and waited >= 1.0


def test_shutdown_ends_the_wait(env, waker):
    shutdown = threading.Event()
    thread = later(0.3, shutdown.set)
    stopped, waited = timed_wait(waker, "sensor", shutdown=shutdown)
    thread.join()
    assert stopped and waited < WOKEN_WITHIN


def test_a_wake_before_a_loop_first_waits_is_not_lost(env, waker):
    """The daemon's first sensor pass can still be running (loading the code location) when the first request is
    made: its wake is owed to the loop's first wait, which returns at once."""
    waker.notify()
    stopped, waited = timed_wait(waker, "sensor")
    assert not stopped and waited < WOKEN_WITHIN


def test_a_woken_loop_passes_again_no_sooner_than_its_spacing(env, waker):
    waker.min_spacing["sensor"] = 1.0
    timed_wait(waker, "sensor", timeout=0.01)  # the loop's first pass: from now on it waits to be woken
    waker.notify()
    assert timed_wait(waker, "sensor")[1] < WOKEN_WITHIN  # the first wake: at once
    waker.notify()
    _, waited = timed_wait(waker, "sensor")
    assert waited >= 0.9  # a second wake right after is held until the spacing passed


def test_a_wake_is_followed_by_passes_until_every_sensor_started_after_it(env, waker):
    """A woken pass skips a sensor evaluated less than its minimum interval before: the wake stays owed, and the
    loop passes again soon (not at its timer) until every sensor has started after the wake."""
    waker.retry_seconds = 0.1
    timed_wait(waker, "sensor", timeout=0.01)
    before = time.time()
    waker.notify()
    timed_wait(waker, "sensor")
    waker.pass_finished("sensor", lambda since: 0.0)  # a sensor was skipped by that pass: pass again now
    assert timed_wait(waker, "sensor")[1] < LONG / 2  # the retry pass, not the timeout
    asked: list[float] = []
    waker.pass_finished("sensor", lambda since: asked.append(since))  # None: every sensor ticked since
    assert asked and asked[0] >= before
    _, waited = timed_wait(waker, "sensor", timeout=1.0)
    assert waited >= 1.0  # served: nothing owed, the loop is back on its timer
    waker.pass_finished("sensor", lambda since: pytest.fail("nothing is owed"))


def test_the_backstop_replaces_the_sensor_and_backfill_timers_but_not_the_queue_interval(env):
    waker = Waker(env.instance, env.home, backstop_seconds=1.0)
    assert timed_wait(waker, "sensor", timeout=LONG)[1] < LONG / 2
    assert timed_wait(waker, "backfill", timeout=LONG)[1] < LONG / 2
    assert timed_wait(waker, "queue", timeout=0.2)[1] < 1.0


def test_a_request_created_while_driver_ticks_race_submits_each_cell_once(env):
    """Four requests made one after another while the driver sensor is evaluated back to back in another thread:
    every cell is requested under one run key, and every cell of every request gets one."""
    backfills = backfills_for_instance(DEFS, env.instance, env.catalog)
    sensor = DEFS.resolve_sensor_def(DRIVER_SENSOR)
    keys_by_cell: dict[tuple[str, str], set[str]] = defaultdict(set)
    done = threading.Event()
    errors: list[BaseException] = []

    def tick() -> None:
        context = dg.build_sensor_context(instance=env.instance, resources={"backfill": BackfillResource()})
        for run_request in sensor(context):
            keys_by_cell[(run_request.tags["backfill/request_id"], run_request.partition_key)].add(run_request.run_key)

    def ticking() -> None:
        try:
            while not done.is_set():
                tick()
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    ticker = threading.Thread(target=ticking)
    ticker.start()
    made = []
    try:
        for day in ("2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"):
            asked = RequestInput(assets=[DAILY_REVENUE], from_day=day, to_day=day, reprocess="completed",
                                 partitions_per_run=1, requested_by="race-test")
            made.append(backfills.create(asked).request.request_id)
    finally:
        done.set()
        ticker.join(timeout=120)
    assert not errors, errors
    tick()  # the backstop tick: whatever the racing ticks missed is requested now
    ledger = Ledger(env.catalog)
    for request_id in made:
        [cell] = ledger.cells(request_id)
        assert cell.decision == M.SUBMITTED
        assert keys_by_cell[(request_id, cell.partition_key)] == {cell.run_key}


def test_a_wake_is_served_once_every_fast_sensor_finished_a_tick_that_started_after_it(env):
    """What the daemon's sensor loop asks after each pass (``sensors_pending_since``), on the orders code location
    loaded as the daemon loads it: not served before any tick, served by a pass that evaluated every sensor, not
    served by ticks that started before the wake."""
    from dagster._core.test_utils import create_test_daemon_workspace_context
    from dagster._core.workspace.load_target import ModuleTarget
    from dagster._daemon.sensor import execute_sensor_iteration

    def sensor_pass() -> None:
        list(execute_sensor_iteration(context, logging.getLogger("test"), threadpool_executor=None,
                                      submit_threadpool_executor=None))

    target = ModuleTarget(module_name=MODULE, attribute=None, working_directory=None, location_name=None)
    with create_test_daemon_workspace_context(target, env.instance) as context:
        woken = time.time()
        assert sensors_pending_since(context, woken) is not None
        sensor_pass()
        assert sensors_pending_since(context, woken) is None
        woken = time.time()  # a wake after those ticks: a pass is worth it once their 1 s interval has passed
        assert 0.0 <= sensors_pending_since(context, woken) <= 1.05
        time.sleep(1.05)
        sensor_pass()
        assert sensors_pending_since(context, woken) is None
