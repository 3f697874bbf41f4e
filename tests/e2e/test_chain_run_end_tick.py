"""Under Dagster's own ``dagster-daemon run`` a depends-on-past chain run one day per run is carried by its runs'
own ends (``integration/runs/run_end_tick.py``): each day's run is queued by the previous day's run, as soon as it
ended, not by the driver sensor's next pass (~5 s); a day that fails queues nothing after it; and however the
sensor ticks meanwhile, each day gets one run.

A real ``dagster-daemon run`` on a home with the shipped ``dagster.yaml`` (its run coordinator and warm run
launcher); ``test_chain_run_end_tick_stock.py`` holds the same on Dagster's own classes. The upstream days are
prepared by in-process runs.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Iterator
from functools import partial

import dagster as dg
import pytest
from dagster._core.scheduler.instigation import InstigatorType, TickStatus
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.sensor import execute_sensor_iteration

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from tests.orders import MODULE

from .conftest import E2E, home_under_dagster_daemon, poll
from .test_launchpad import launch_job

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("e2e/test_chain_run_end_tick")]

# Every chain starts on the calendar's first day (a later day needs its previous day published) and recomputes it
# (``--reprocess completed``): the tests do not depend on each other's days.
SEED_FROM, SEED_TO = "2022-09-01", "2022-09-04"
CHAIN = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"]
FAILING = CHAIN[:3]  # the middle day's check fails
RACED = CHAIN
TIMEOUT = "180"
TICK_TAG = "dagster/tick"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2E]:
    """``dagster-daemon run`` on the shipped dagster.yaml, as ``dagster dev`` runs it. The home of Dagster's own
    classes is another module's (``test_chain_run_end_tick_stock.py``): a home is this process's environment
    (``DAGSTER_HOME``) for as long as its fixture lives."""
    yield from home_under_dagster_daemon(tmp_path_factory, "shipped", False, (SEED_FROM, SEED_TO))


def chain(env: E2E, days: list[str], *extra: str) -> str:
    env.prepare(days, [RAW_ORDERS, ORDER_FACTS])
    created = env.create("--assets", CUSTOMER_SNAPSHOT, "--from", days[0], "--to", days[-1],
                         "--partitions-per-run", "1", "--reprocess", "completed", *extra)
    return created["request_id"]


def runs_in_order(env: E2E, request_id: str) -> list[dg.RunRecord]:
    return sorted(env.run_records(request_id), key=lambda r: r.dagster_run.tags[T.DAGSTER_PARTITION])


def assert_queued_by_previous_runs(runs: list[dg.RunRecord], by_run_ends: int = 1) -> None:
    """Each run after the first was queued by the previous run's end, at least ``by_run_ends`` of them. The
    daemon's sensor still passes every ~5 s: one that decided between the run's end and its tick's decisions (made
    ready while the run ended, they follow its end by some tens of ms) records the day first (of two ticks, one
    records), and then its run is the sensor's; never both. How soon the next run starts is the benchmark's to say
    (``bench.micro.chain_gap``), not a test's: a loaded machine only makes it later."""
    by_run_end = 0
    for previous, record in zip(runs, runs[1:], strict=False):
        tags = record.dagster_run.tags
        assert record.start_time and previous.end_time and record.start_time >= previous.end_time
        if tags.get(T.QUEUED_BY) == previous.dagster_run.run_id and TICK_TAG not in tags:
            by_run_end += 1
            continue
        assert TICK_TAG in tags and T.QUEUED_BY not in tags, tags
    assert by_run_end >= by_run_ends, f"{by_run_end} run(s) queued by their previous run's end"


def wait_for_driver_tick_after(env: E2E, moment: float) -> None:
    """Until the daemon's driver sensor has finished a tick it began after ``moment`` (a timestamp)."""
    states = [state for state in env.instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
              if state.instigator_name == DRIVER_SENSOR]

    def finished_tick() -> bool:
        return any(tick.status != TickStatus.STARTED for state in states
                   for tick in env.instance.get_ticks(state.instigator_origin_id, state.selector_id, after=moment))

    poll(finished_tick, float(TIMEOUT), "a driver sensor tick after the run's end")


def assert_one_run_per_key(env: E2E, request_id: str) -> None:
    runs = env.run_records(request_id)
    keys = Counter(r.dagster_run.tags[T.DAGSTER_RUN_KEY] for r in runs)
    assert set(keys.values()) == {1}, keys
    submitted = {c.run_key for c in Ledger(env.catalog).cells(request_id) if c.run_key}
    assert set(keys) == submitted


def test_each_day_of_a_chain_is_queued_by_the_previous_days_run_as_it_ends(shipped):
    request_id = chain(shipped, CHAIN)
    shipped.wait(request_id, timeout=TIMEOUT)
    assert Ledger(shipped.catalog).get(request_id).status == M.COMPLETED
    runs = runs_in_order(shipped, request_id)
    assert [r.dagster_run.tags[T.DAGSTER_PARTITION] for r in runs] == CHAIN
    assert {r.dagster_run.status for r in runs} == {dg.DagsterRunStatus.SUCCESS}
    assert_queued_by_previous_runs(runs)
    assert_one_run_per_key(shipped, request_id)


def test_a_chain_day_that_fails_queues_no_run_after_it(shipped):
    conf = {CUSTOMER_SNAPSHOT: {"defect_days": {FAILING[1]: "drop_rows"}}}
    request_id = chain(shipped, FAILING, "--conf", json.dumps(conf))
    shipped.wait(request_id, expect_exit=1, timeout=TIMEOUT)
    runs = runs_in_order(shipped, request_id)
    assert [r.dagster_run.tags[T.DAGSTER_PARTITION] for r in runs] == FAILING[:2]
    assert [r.dagster_run.status for r in runs] == [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE]
    # Whoever queued the failed day (its one hand-off is the previous test's to hold to the run's end), only once.
    assert_queued_by_previous_runs(runs, by_run_ends=0)
    last = {c.partition_key: c for c in Ledger(shipped.catalog).cells(request_id)}[FAILING[2]]
    assert last.decision == M.SKIPPED and last.run_key is None
    end_time = runs[-1].end_time
    assert end_time is not None
    wait_for_driver_tick_after(shipped, end_time)  # a sensor pass after the failed run's end submits nothing either
    assert len(shipped.run_records(request_id)) == 2


def test_a_chain_whose_run_ends_race_sensor_passes_runs_each_day_once(shipped):
    """Besides the daemon's own passes, Dagster's sensor daemon pass run here over and over (as often as the
    driver's 1 s minimum interval lets it) while the chain runs: every day has one run, whoever queued it."""
    stop = threading.Event()
    errors: list[BaseException] = []
    target = ModuleTarget(module_name=MODULE, attribute=None, working_directory=None, location_name=None)

    def sensor_passes() -> None:
        try:
            with create_test_daemon_workspace_context(target, shipped.instance) as context:
                while not stop.is_set():
                    list(execute_sensor_iteration(context, logging.getLogger("test"), threadpool_executor=None,
                                                  submit_threadpool_executor=None))
                    time.sleep(0.05)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    racer = threading.Thread(target=sensor_passes)
    racer.start()
    try:
        request_id = chain(shipped, RACED)
        shipped.wait(request_id, timeout=TIMEOUT)
    finally:
        stop.set()
        racer.join(timeout=60)
    assert not errors, errors
    assert Ledger(shipped.catalog).get(request_id).status == M.COMPLETED
    runs = runs_in_order(shipped, request_id)
    assert [r.dagster_run.tags[T.DAGSTER_PARTITION] for r in runs] == RACED
    assert_one_run_per_key(shipped, request_id)


def new_requests(env: E2E, before: set[str]) -> list:
    return [r for r in Ledger(env.catalog).list() if r.request_id not in before]


def test_a_request_made_from_the_launchpad_queues_its_first_run_from_the_launchpad_run(shipped):
    """The ``backfill_request`` run does the first tick itself, for the module it was loaded from: its request's
    run carries no sensor tick. A sensor pass may come between the freeze and that tick (it then creates the run):
    tried on up to three days."""
    shipped.prepare(CHAIN, [RAW_ORDERS])
    for day in CHAIN[:3]:
        before = {r.request_id for r in Ledger(shipped.catalog).list()}
        launch_job(REQUEST_JOB, REQUEST_OP, {"assets": [ORDER_FACTS], "from_day": day, "to_day": day,
                                             "reprocess": "completed", "reason": "from the Launchpad"})
        [record] = poll(partial(new_requests, shipped, before), float(TIMEOUT), "the backfill_request run's request")
        shipped.wait(record.request_id, timeout=TIMEOUT)
        runs = shipped.instance.get_runs(dg.RunsFilter(tags={T.REQUEST_ID: record.request_id}))
        assert len(runs) == 1, json.dumps(shipped.show(record.request_id)["cells"], default=str)
        [run] = runs
        if TICK_TAG not in run.tags:
            return
    pytest.fail("every Launchpad request's run was created by a sensor tick")
