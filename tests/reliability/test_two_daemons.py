"""Two daemons on one home: a second ``backfill-assets-daemon run`` beside a running one, and two Dagster drivers
ticking one request at once (what two ``dagster-daemon run`` on one instance do, which nothing can refuse).

A start trial is one second daemon started on the home of a running one: it exits 1 with one line naming the
first (host, pid, since when), having started nothing, and the first keeps running. A race trial drives one
request to its end with two drivers (the real driver sensor's ``drive_request``, on two threads) ticking it at
once every round, each round's run requests executed as real runs through the gate — every one of them, as two
daemons would launch them; then: each run key has one run, each cell one published version in the request, no
cell failed, the request completed.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta

import pytest

from backfill_assets import graph_of
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store.daemon_lease import DaemonLease
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import versions
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request
from tests.driver_harness import execute_submission
from tests.e2e.services import stop_process
from tests.orders import DEFS, MODULE, run_partitions

from . import mode
from .daemon import Daemon, instance_yaml, request_runs

DRIVERS = 2
DAYS_PER_REQUEST = 4
MAX_ROUNDS = 40
START_TIMEOUT = 300.0


def days_for(trial: int) -> list[str]:
    first = date(2022, 9, 1) + timedelta(days=trial * DAYS_PER_REQUEST)
    return [(first + timedelta(days=i)).isoformat() for i in range(DAYS_PER_REQUEST)]


def race_request_to_its_end(env, days: list[str]) -> tuple[str, int]:
    """One request driven by DRIVERS drivers at once each round; returns its id and how many rounds had a tick
    that recorded nothing because another driver recorded first (or had nothing new to submit)."""
    env.activate()
    assert all(r.success for r in run_partitions(env.instance, days, assets=[RAW_ORDERS]))
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", days[0], "--to", days[-1],
                              "--reprocess", "completed", "--max-active", "2", "--partitions-per-run", "1",
                              "--requested-by", "reliability")["request_id"]
    graph, ledger, loaded, idle = graph_of(DEFS), Ledger(env.catalog), code_version(), 0
    with ThreadPoolExecutor(DRIVERS) as pool:
        for _ in range(MAX_ROUNDS):
            record = ledger.get(request_id)
            if record.status in (*M.CLOSED_STATUSES, M.BLOCKED):
                break
            drivers = [pool.submit(drive_request, graph, env.instance, env.catalog, record, loaded)
                       for _ in range(DRIVERS)]
            submitted = [driver.result() for driver in drivers]
            idle += sum(1 for s in submitted if not s)
            for submission in (s for each in submitted for s in each):
                execute_submission(env, record, submission)  # every run request, as two daemons would launch them
    return request_id, idle


def assert_one_run_per_key_and_one_publish_per_cell(env, request_id: str) -> None:
    keys = Counter(run.tags.get(RUN_KEY_TAG) for run in request_runs(env.instance, request_id))
    assert [k for k, n in keys.items() if n > 1] == [], f"a run key has two runs: {keys}"
    own = env.catalog.versions_where(versions.c.request_id == request_id)
    publishes = Counter((v.asset, v.partition_key) for v in own if v.published_at)
    assert [c for c, n in publishes.items() if n > 1] == [], f"a cell was published twice: {publishes}"
    ledger = Ledger(env.catalog)
    record = ledger.get(request_id)
    assert record.status == M.COMPLETED, f"{request_id} is {record.status}: {record.row['message']}"
    cells = ledger.cells(request_id)
    assert [(c.partition_key, c.decision, c.reason) for c in cells if c.decision != M.PUBLISHED] == []
    assert set(publishes) == {c.key for c in cells}


@pytest.mark.timeout(mode.timeout(per_trial_seconds=60, fixed_seconds=60))
def test_two_drivers_racing_over_a_request_run_each_key_once_and_publish_each_cell_once(envs, trials):
    with trials("service.two_daemons") as klass:
        for n in range(mode.TRIALS):
            backend = "postgres" if n % 2 else "sqlite"
            with klass.trial(f"race {n} ({backend} catalog)"):
                env = envs(f"race-{n}", backend=backend)
                request_id, idle = race_request_to_its_end(env, days_for(n))
                assert_one_run_per_key_and_one_publish_per_cell(env, request_id)
                if idle:
                    klass.note("of two drivers ticking at once, the one that read before the other recorded "
                               "submitted nothing")


def second_start(env) -> subprocess.CompletedProcess:
    proc = subprocess.Popen(
        [dagster_bin("backfill-assets-daemon"), "run", "-m", MODULE], env=dict(os.environ), cwd=str(env.home),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        stop_process(proc)
        raise AssertionError("the second daemon started beside the first instead of refusing") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


@pytest.mark.daemon
@pytest.mark.timeout(mode.timeout(per_trial_seconds=30, fixed_seconds=120, trials=mode.trials_of(5, 1)))
def test_a_second_daemon_on_the_home_is_refused_naming_the_first(envs, trials):
    env = envs("two-daemons", instance_yaml=instance_yaml(postgres=False))
    first = Daemon(env.home, env.instance, env.home.parent / "first-daemon.log")
    first.start()
    try:
        with trials("service.two_daemons") as klass:
            for n in range(mode.trials_of(5, 1)):
                with klass.trial(f"second start {n}"):
                    result = second_start(env)
                    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
                    lines = [line for line in result.stderr.splitlines() if line.strip()]
                    held = DaemonLease(env.catalog).current()
                    assert len(lines) == 1 and f"pid {first.proc.pid}" in lines[0], lines
                    assert f"host {held.who.host}" in lines[0] and held.acquired_at in lines[0], lines
                    assert first.alive(), "the first daemon stopped"
    finally:
        first.stop_all()
