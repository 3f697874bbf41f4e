"""Gates an asset declares, with real runs on a real instance: its own Dagster pool (root assets default to
``source_system``), a write target's quota (catalog leases), production's steps ahead of a backfill's in a pool's
queue, and the team a request's runs are charged to. Bad gate config is refused when the code location loads."""

from __future__ import annotations

import threading
import time
from typing import Callable

import dagster as dg
import pandas as pd
import pytest

from backfill_assets import (
    BackfillResource,
    BusinessCalendar,
    InvalidInput,
    backfill_definitions,
    backfills_for_instance,
    gated_asset,
)
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.gates import DEFAULT_SOURCE_POOL, UNOWNED_TEAM, team_of_request
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import target_slot_waiters
from backfill_assets.engine.store.target_slots import TargetSlots
from backfill_assets.integration.assets.chunks import CHUNK_JOB, op_name
from backfill_assets.integration.runs.local_runs import run_partitions
from tests.homes import shipped_storage

CALENDAR = BusinessCalendar("UTC", "2024-01-01")
POOL, TARGET = "crm_api", "warehouse_x"
DAYS = ("2024-01-01", "2024-01-02", "2024-01-03")
BACKFILL = {T.LANE: T.LANE_BACKFILL, T.DAGSTER_PRIORITY: str(T.PRIORITY_BACKFILL)}
PRODUCTION = {T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PRIORITY: str(T.PRIORITY_PRODUCTION)}
WAIT = 60.0


class Steps:
    """What the steps saw, in order, and a latch that keeps the first day's step inside its gate."""

    def __init__(self):
        self.entered: list[str] = []
        self.writing: list[tuple[str, str]] = []
        self.release = threading.Event()
        self.lock = threading.Lock()

    def enter(self, day: str) -> None:
        with self.lock:
            self.entered.append(day)
        if day == DAYS[0]:
            assert self.release.wait(WAIT), "the test never released the first day"


STEPS = Steps()


def _frame(interval) -> pd.DataFrame:
    return pd.DataFrame({"day": [interval.key], "n": [1]})


@gated_asset(calendar=CALENDAR, pool=POOL, owners=["team:crm"])
def crm_extract(interval) -> pd.DataFrame:
    """Holds the pool's one slot while the first day is latched."""
    STEPS.enter(interval.key)
    return _frame(interval)


def latched(frame: pd.DataFrame, interval) -> bool:
    """Runs inside the target's write slot (write, audit, publish)."""
    STEPS.writing.append(("in", interval.key))
    STEPS.enter(interval.key)
    STEPS.writing.append(("out", interval.key))
    return True


def _target_asset():
    from backfill_assets import audit

    @gated_asset(calendar=CALENDAR, target=TARGET, audits=[audit(latched)], owners=["team:finance"])
    def loaded(interval) -> pd.DataFrame:
        return _frame(interval)

    return loaded


@gated_asset(calendar=CALENDAR, deps=[crm_extract])
def crm_daily(crm_extract: pd.DataFrame) -> pd.DataFrame:
    return crm_extract


@gated_asset(calendar=CALENDAR)
def plain_root(interval) -> pd.DataFrame:
    return _frame(interval)


@pytest.fixture
def home(tmp_path, monkeypatch):
    global STEPS
    STEPS = Steps()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # the catalog and the warehouse live under it
    for name in ("BACKFILL_CATALOG_URL", "BACKFILL_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path
    STEPS.release.set()


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _run_in_thread(instance, defs, day: str, tags: dict, results: dict) -> threading.Thread:
    """One run on a thread of this process (``sqlalchemy.orm`` was imported whole with the code location, before
    any thread: ``tests/integration/test_thread_safe_imports.py``)."""

    def run() -> None:
        [results[day]] = run_partitions(instance, [day], defs=defs, tags=tags)

    thread = threading.Thread(target=run, name=f"run-{day}")
    thread.start()
    return thread


# ---- declaring ------------------------------------------------------------------------------------------------


def test_each_step_waits_in_the_pool_its_asset_chose_and_a_root_asset_defaults_to_source_system():
    defs = backfill_definitions(assets=[crm_extract, crm_daily, plain_root])
    pools = {name: defs.resolve_assets_def(name).op.pool for name in ("crm_extract", "crm_daily", "plain_root")}
    assert pools == {"crm_extract": POOL, "crm_daily": None, "plain_root": DEFAULT_SOURCE_POOL}
    chunk = defs.resolve_job_def(CHUNK_JOB)
    assert chunk.graph.node_named(op_name("crm_extract")).definition.pool == POOL


@pytest.mark.parametrize("declare, message", [
    (lambda: gated_asset(calendar=CALENDAR, pool="")(plain_root.spec.transform),
     "plain_root: pool '' must be 1-64 letters"),
    (lambda: gated_asset(calendar=CALENDAR, target="bad target")(plain_root.spec.transform),
     "plain_root: target 'bad target' must be 1-64 letters"),
    (lambda: backfill_definitions(assets=[_target_asset()]),
     "every write target needs a limit: loaded writes to 'warehouse_x' — set BackfillResource(target_limits="),
    (lambda: backfill_definitions(assets=[_target_asset()], backfill=BackfillResource(target_limits={TARGET: 0})),
     "target_limits['warehouse_x'] = 0: a write limit is a whole number, at least 1"),
    (lambda: backfill_definitions(assets=[_target_asset()], backfill=BackfillResource(
        target_limits={TARGET: 1}, target_lease_seconds=0)),
     "target_lease_seconds = 0.0: a number of seconds, at least 0.3"),
], ids=["empty-pool", "bad-target-name", "target-without-limit", "zero-limit", "zero-lease"])
def test_bad_gate_config_is_refused_when_the_code_location_loads(declare, message):
    with pytest.raises(InvalidInput) as refused:
        declare()
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_a_request_is_charged_to_the_team_of_its_most_upstream_asset():
    assert team_of_request([("raw", ["team:ingestion", "ana@example.com"]), ("facts", ["team:analytics"])]) == (
        "team:ingestion"
    )
    assert team_of_request([("raw", [])]) == UNOWNED_TEAM


# ---- real runs ------------------------------------------------------------------------------------------------


# The control: a last comer below the backfill's priority is served last. Not "same priority, first come first
# served": on SQLite Dagster stamps a waiting step to the second, so two steps queued within one second tie, and
# their order is SQLite's to choose.
LOWER = {T.LANE: T.LANE_MANUAL, T.DAGSTER_PRIORITY: str(T.PRIORITY_BACKFILL - 5)}


@pytest.mark.parametrize("production_tags, expected", [
    (PRODUCTION, [DAYS[0], DAYS[2], DAYS[1]]),
    (LOWER, [DAYS[0], DAYS[1], DAYS[2]]),
], ids=["production-first", "lower-priority-last"])
def test_a_production_step_takes_the_freed_pool_slot_before_a_backfill_step_that_waited_longer(
    home, production_tags, expected
):
    defs = backfill_definitions(assets=[crm_extract])
    overrides = {**shipped_storage(), "concurrency": {"pools": {"default_limit": 1, "granularity": "op"}}}
    results: dict = {}
    with dg.instance_for_test(temp_dir=str(home), overrides=overrides) as instance:
        def pending() -> int:
            return instance.event_log_storage.get_concurrency_info(POOL).pending_step_count

        threads = [_run_in_thread(instance, defs, DAYS[0], BACKFILL, results)]
        _until(lambda: STEPS.entered == [DAYS[0]], "the first backfill step to hold the pool")
        threads.append(_run_in_thread(instance, defs, DAYS[1], BACKFILL, results))
        _until(lambda: pending() == 1, "the second backfill step to wait in the pool")
        threads.append(_run_in_thread(instance, defs, DAYS[2], production_tags, results))
        _until(lambda: pending() == 2, "the production step to wait in the pool")
        STEPS.release.set()
        for thread in threads:
            thread.join(WAIT)
    assert STEPS.entered == expected
    assert all(results[day].success for day in DAYS), results


def test_a_write_target_admits_its_limit_of_steps_and_the_next_waits_for_a_slot(home):
    defs = backfill_definitions(assets=[_target_asset()], backfill=BackfillResource(target_limits={TARGET: 1}))
    catalog = Catalog(f"sqlite:///{home}/catalog.db")
    results: dict = {}
    with dg.instance_for_test(temp_dir=str(home), overrides=shipped_storage()) as instance:
        first = _run_in_thread(instance, defs, DAYS[0], BACKFILL, results)
        _until(lambda: STEPS.entered == [DAYS[0]], "the first step to hold the target's slot")
        second = _run_in_thread(instance, defs, DAYS[1], PRODUCTION, results)

        def waiting() -> bool:
            with catalog.reader.connect() as conn:
                return conn.execute(target_slot_waiters.select()).first() is not None

        _until(waiting, "the second step to queue for the target")
        assert [h.partition_key for h in TargetSlots(catalog).holders(TARGET)] == [DAYS[0]]
        STEPS.release.set()
        first.join(WAIT)
        second.join(WAIT)
        served = {day: backfills_for_instance(defs, instance).serving("loaded", day) for day in DAYS[:2]}
    assert all(results[day].success for day in DAYS[:2]), results
    assert all(v is not None for v in served.values())
    # The second day's write and audit began only after the first day's ended: never two in the target at once.
    assert STEPS.writing == [("in", DAYS[0]), ("out", DAYS[0]), ("in", DAYS[1]), ("out", DAYS[1])]
    assert TargetSlots(catalog).holders(TARGET) == []


@pytest.mark.parametrize("assets, team", [
    ("raw_orders,order_facts", "team:ingestion"),  # several owners: the most upstream asset's
    ("daily_revenue,order_facts", "team:analytics"),
])
def test_a_requests_runs_carry_the_team_they_are_charged_to(env, assets, team):
    import json

    from click.testing import CliRunner

    from backfill_assets.cli import cli
    from backfill_assets.engine.model.settings import code_version
    from backfill_assets.engine.store.ledger import Ledger
    from backfill_assets.integration.sensors.driver import drive_request, run_request_for
    from tests.orders import GRAPH

    result = CliRunner().invoke(cli, ["request", "create", "--assets", assets, "--from", "2022-09-01", "--to",
                                      "2022-09-02", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    record = Ledger(env.catalog).get(json.loads(result.output)["request_id"])
    with dg.instance_for_test(temp_dir=str(env.home)) as instance:
        submissions = drive_request(GRAPH, instance, env.catalog, record, code_version())
    assert submissions
    assert {run_request_for(GRAPH, record, s).tags[T.TEAM] for s in submissions} == {team}
