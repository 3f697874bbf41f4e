"""``request create`` queues a request's first runs itself (``integration/runs/direct_tick.py``): before any
sensor tick after it, the runs exist, with the run keys the driver sensor would use, built as Dagster's sensor
daemon builds the sensor's runs; a sensor pass after it submits none of them again, and a create whose tick races a
sensor pass submits each cell once.

A real instance of Dagster's own classes (``QueuedRunCoordinator``; the queue is never dequeued here, so the runs
stay QUEUED) and Dagster's own sensor daemon pass (``execute_sensor_iteration``) over the orders code location
loaded as the daemon loads it, by a code server. No daemon process: every sensor pass is the test's.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from click.testing import CliRunner
from dagster._core.scheduler.instigation import InstigatorStatus
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.sensor import execute_sensor_iteration

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.examples.orders.source import SourceSystem
from backfill_assets.integration.runs.direct_tick import NO_SENSOR, DirectTick
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from backfill_assets.service import RequestInput
from tests.homes import HasStores, fresh_home, write_stock_instance_yaml
from tests.orders import CALENDAR, DEFS, GRAPH, MODULE

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05", "2022-09-06", "2022-09-07",
        "2022-09-08", "2022-09-09"]
# Tags the sensor's tick adds that a create's tick has no counterpart of.
TICK_ONLY_TAGS = {"dagster/tick"}


@dataclass
class Stock(HasStores):
    home: Path
    settings: Settings
    instance: dg.DagsterInstance
    context: Any  # the daemon's workspace (WorkspaceProcessContext)

    def sensor_pass(self) -> None:
        """A pass of Dagster's sensor daemon over the code location that ticks the driver (and creates the runs
        it asks for): passes are repeated until one does (a sensor ticks at most once per its interval)."""
        since = time.time()
        while self.driver_ticks_since(since) == 0:
            list(execute_sensor_iteration(self.context, logging.getLogger("test"), threadpool_executor=None,
                                          submit_threadpool_executor=None))
            time.sleep(0.1)

    def driver_ticks_since(self, since: float) -> int:
        return sum(len(self.instance.get_ticks(state.instigator_origin_id, state.selector_id, after=since))
                   for state in self.instance.all_instigator_state() if state.instigator_name == DRIVER_SENSOR)

    def runs_of(self, request_id: str) -> list[dg.DagsterRun]:
        return list(self.instance.get_runs(dg.RunsFilter(tags={T.REQUEST_ID: request_id})))

    def submitted_keys(self, request_id: str) -> set[str]:
        return {c.run_key for c in Ledger(self.catalog).cells(request_id) if c.decision == M.SUBMITTED}


@pytest.fixture(scope="module")
def stock(tmp_path_factory) -> Iterator[Stock]:
    home = tmp_path_factory.mktemp("direct") / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        settings = fresh_home(home, mp)
        write_stock_instance_yaml(home)
        SourceSystem(settings.source_url).seed(CALENDAR, DAYS[0], DAYS[-1], 20)
        instance = dg.DagsterInstance.get()
        target = ModuleTarget(module_name=MODULE, attribute=None, working_directory=None, location_name=None)
        try:
            with create_test_daemon_workspace_context(target, instance) as context:
                yield Stock(home, settings, instance, context)
        finally:
            instance.dispose()
            dispose_all()


def create(stock: Stock, first: str, last: str) -> str:
    result = CliRunner().invoke(cli, [
        "--home", str(stock.home), "-m", MODULE, "request", "create", "--assets", RAW_ORDERS, "--from", first,
        "--to", last, "--reprocess", "completed", "--partitions-per-run", "1", "--max-active", "1",
        "--requested-by", "tester", "--json",
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["request_id"]


def created_without_its_tick(stock: Stock, first: str, last: str) -> str:
    """A request made by a service that leaves its first tick to the sensor (a Python caller's)."""
    backfills = backfills_for_instance(DEFS, stock.instance, stock.catalog, first_tick=False)
    asked = RequestInput(assets=[RAW_ORDERS], from_day=first, to_day=last, reprocess="completed",
                         partitions_per_run=1, max_active=1, requested_by="tester")
    return backfills.create(asked).request.request_id


def snapshot_text(stock: Stock, run: dg.DagsterRun) -> str:
    return dg.serialize_value(stock.instance.get_job_snapshot(run.job_snapshot_id)).replace("__frozenset__", "__set__")


def test_before_any_daemon_evaluated_the_driver_create_leaves_it_to_the_sensor(stock):
    request_id = created_without_its_tick(stock, DAYS[0], DAYS[0])
    driven = DirectTick(MODULE, str(Path.cwd()))(stock.instance, GRAPH, stock.catalog, request_id)
    assert driven.left_to_sensor == NO_SENSOR and stock.runs_of(request_id) == []
    stock.sensor_pass()  # the sensor submits it (and from now on the instance knows where the driver runs)
    assert {r.tags[T.DAGSTER_RUN_KEY] for r in stock.runs_of(request_id)} == stock.submitted_keys(request_id)


def test_create_queues_the_runs_the_sensor_would_and_a_sensor_pass_after_it_adds_none(stock):
    stock.sensor_pass()
    request_id = create(stock, DAYS[1], DAYS[2])
    # No sensor pass since: the runs are create's own, one per key the ledger recorded, queued in the run queue.
    runs = stock.runs_of(request_id)
    keys = stock.submitted_keys(request_id)
    assert keys and sorted(r.tags[T.DAGSTER_RUN_KEY] for r in runs) == sorted(keys)
    assert {r.status for r in runs} == {dg.DagsterRunStatus.QUEUED}
    stock.sensor_pass()
    stock.sensor_pass()
    assert sorted(r.run_id for r in stock.runs_of(request_id)) == sorted(r.run_id for r in runs)

    # The sensor's own run of a request like it: the same job, origins, snapshot and tags but the tick's.
    by_sensor = created_without_its_tick(stock, DAYS[3], DAYS[3])
    stock.sensor_pass()
    [theirs] = stock.runs_of(by_sensor)
    ours = runs[0]
    assert ours.job_name == theirs.job_name and ours.asset_selection == theirs.asset_selection
    assert ours.remote_job_origin == theirs.remote_job_origin
    assert ours.job_code_origin == theirs.job_code_origin, (repr(ours.job_code_origin), repr(theirs.job_code_origin))
    # The same job snapshot; only its lineage's asset selection arrives from a code server as a set.
    assert snapshot_text(stock, ours) == snapshot_text(stock, theirs)
    assert set(ours.tags) == set(theirs.tags) - TICK_ONLY_TAGS
    for same in (T.DAGSTER_SENSOR, T.LANE, T.DAGSTER_PRIORITY, T.TEAM, T.CODE_VERSION, T.REPROCESS):
        assert ours.tags[same] == theirs.tags[same], same
    assert sorted(r.tags[T.DAGSTER_PARTITION] for r in runs) == DAYS[1:3]
    assert theirs.tags[T.DAGSTER_PARTITION] == DAYS[3]


def race(*actions: Callable[[], object]) -> None:
    """Run ``actions`` in threads released at the same moment; re-raise what any of them raised."""
    start = threading.Barrier(len(actions))
    errors: list[BaseException] = []

    def racing(action: Callable[[], object]) -> None:
        try:
            start.wait()
            action()
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    racers = [threading.Thread(target=racing, args=(action,)) for action in actions]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join(timeout=120)
    assert not errors, errors


def test_a_create_tick_racing_a_sensor_pass_submits_each_cell_once(stock):
    stock.sensor_pass()
    tick = DirectTick(MODULE, str(Path.cwd()))
    for day in DAYS[4:6]:
        request_id = created_without_its_tick(stock, day, day)
        race(partial(tick, stock.instance, GRAPH, stock.catalog, request_id), stock.sensor_pass)
        stock.sensor_pass()  # the backstop: whatever the racing ticks left is requested now
        keys = Counter(r.tags[T.DAGSTER_RUN_KEY] for r in stock.runs_of(request_id))
        assert set(keys) == stock.submitted_keys(request_id) and set(keys.values()) == {1}, keys


def test_a_driver_sensor_stopped_in_the_ui_is_not_bypassed(stock):
    stock.sensor_pass()
    [state] = [s for s in stock.instance.all_instigator_state() if s.instigator_name == DRIVER_SENSOR]
    stock.instance.update_instigator_state(state.with_status(InstigatorStatus.STOPPED))
    try:
        request_id = created_without_its_tick(stock, DAYS[6], DAYS[6])
        driven = DirectTick(MODULE, str(Path.cwd()))(stock.instance, GRAPH, stock.catalog, request_id)
        assert driven.left_to_sensor == NO_SENSOR and stock.runs_of(request_id) == []
    finally:
        stock.instance.update_instigator_state(state)


def test_a_request_frozen_under_other_code_than_the_daemons_is_left_to_the_sensor_which_blocks_it(stock, monkeypatch):
    stock.sensor_pass()  # the driver's cursor: the code version the code server loaded
    monkeypatch.setenv("BACKFILL_CODE_VERSION", "other-code")
    request_id = create(stock, DAYS[7], DAYS[7])
    assert stock.runs_of(request_id) == []
    stock.sensor_pass()
    assert Ledger(stock.catalog).get(request_id).status == M.BLOCKED
    assert stock.runs_of(request_id) == []


def test_a_python_callers_create_queues_its_first_runs_itself_as_the_cli_does(stock):
    stock.sensor_pass()
    backfills = backfills_for_instance(DEFS, stock.instance, stock.catalog)  # the definitions' module is found
    asked = RequestInput(assets=[RAW_ORDERS], from_day=DAYS[8], to_day=DAYS[8], reprocess="completed",
                         partitions_per_run=1, max_active=1, requested_by="tester")
    request_id = backfills.create(asked).request.request_id
    # No sensor pass since: the run is the create's own, queued, with the key the ledger recorded.
    [run] = stock.runs_of(request_id)
    assert {run.tags[T.DAGSTER_RUN_KEY]} == stock.submitted_keys(request_id)
    assert run.status == dg.DagsterRunStatus.QUEUED and not set(run.tags) & TICK_ONLY_TAGS
    stock.sensor_pass()
    assert [r.run_id for r in stock.runs_of(request_id)] == [run.run_id]
