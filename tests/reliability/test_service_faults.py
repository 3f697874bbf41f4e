"""Service faults under a real dagster-daemon: the daemon SIGKILLed and restarted mid-request, and the
PostgreSQL server restarted mid-request with Dagster's storage and the catalog on it.

A trial is one kill-and-restart (or one server restart) during a running request; a request takes three of
them, at different moments: right after the driver recorded a cell as submitted but before its run exists
(the sensor tick's window), while runs are in flight, and at a random moment. After each request: it
completes, every cell is published (none lost), each submitted cell has its own run key and exactly one run
(none submitted twice), and reconcile finds no duplicate publish and no gap.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time

import dagster as dg
import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store import db
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from tests.orders import GRAPH, run_partitions

from . import mode
from .daemon import (
    Daemon,
    assert_each_cell_ran_once_and_published,
    explain_runs,
    instance_yaml,
    request_runs,
    wait_until_closed,
)
from .envs import pg_isready

pytestmark = pytest.mark.daemon

FAULTS_PER_REQUEST = 3
DAYS_PER_REQUEST = 6
REQUEST_TIMEOUT = 240.0
MOMENTS = ("tick window", "runs in flight", "random")


def days_for(request_no: int) -> list[str]:
    """Requests of one test use disjoint days, so each starts with nothing in flight."""
    from datetime import date, timedelta

    first = date(2022, 9, 1) + timedelta(days=request_no * DAYS_PER_REQUEST)
    return [(first + timedelta(days=i)).isoformat() for i in range(DAYS_PER_REQUEST)]


def requests_needed() -> int:
    return max(1, -(-mode.TRIALS // FAULTS_PER_REQUEST))


def wait_for_moment(env, request_id: str, moment: str, rng: random.Random, timeout: float = 60.0) -> str:
    """Block until the chosen moment of the request's life; returns what was observed."""
    ledger = Ledger(env.catalog)
    deadline = time.monotonic() + timeout
    if moment == "random":
        time.sleep(rng.uniform(0.5, 6.0))
        return "random"
    while time.monotonic() < deadline:
        runs = request_runs(env.instance, request_id)
        if moment == "tick window":
            have = {r.tags.get("dagster/run_key") for r in runs}
            waiting = [c for c in ledger.cells(request_id) if c.decision == M.SUBMITTED and c.run_key not in have]
            if waiting:
                return f"tick window ({waiting[0].partition_key} submitted, no run yet)"
        elif any(r.status == dg.DagsterRunStatus.STARTED for r in runs):
            return "runs in flight"
        if ledger.get(request_id).status in M.CLOSED_STATUSES:
            return "request already closed"
        time.sleep(0.02)
    return f"{moment} not seen in {timeout} s"


def explain_cells(env, request_id: str) -> str:
    """Every cell of the request that did not publish, with its decision and reason (a failed request's why)."""
    cells = Ledger(env.catalog).cells(request_id)
    return "\n".join(f"  {c.asset} {c.partition_key} {c.decision}: {c.reason}" for c in cells
                     if c.decision != M.PUBLISHED)


def run_request_under_faults(env, daemon: Daemon, days: list[str], fault, klass, label: str, rng) -> None:
    """One request of order_facts over ``days`` with FAULTS_PER_REQUEST faults injected while it runs.

    Each fault is a trial with its own immediate checks (the daemon is back, no partition has a second run);
    the request's outcome is checked once at the end and, if it fails, counts against every fault of it.
    """
    env.activate()
    assert all(r.success for r in run_partitions(env.instance, days, assets=[RAW_ORDERS]))
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", days[0], "--to", days[-1],
                              "--reprocess", "completed", "--max-active", "2", "--partitions-per-run", "1",
                              "--requested-by", "reliability")["request_id"]
    # One run per interval (not the default chunks): the faults land between runs, in tick windows and in flight.
    labels = []
    for k in range(FAULTS_PER_REQUEST):
        labels.append(f"{label}.{k}")
        with klass.trial(labels[-1]):
            seen = wait_for_moment(env, request_id, MOMENTS[k % len(MOMENTS)], rng)
            klass.note(f"moment: {seen.split(' (')[0]}")
            fault(seen)
            assert daemon.alive(), "dagster-daemon is not running after the fault"
            keys = [r.tags.get("dagster/run_key") for r in request_runs(env.instance, request_id)]
            assert len(keys) == len(set(keys)), f"a run key was launched twice: {sorted(keys)}"
    started = time.monotonic()
    try:
        status = wait_until_closed(env.catalog, request_id, daemon, REQUEST_TIMEOUT)
        assert status == M.COMPLETED, \
            f"{status}\n{explain_cells(env, request_id)}\n{explain_runs(env.instance, request_id)}"
        for note in assert_each_cell_ran_once_and_published(env, request_id):
            klass.note(note)
    except Exception as exc:  # noqa: BLE001 - counted against every fault of this request
        klass.fail_all(labels, exc)
    finally:
        klass.result.seconds += time.monotonic() - started


@pytest.fixture
def sqlite_daemon_env(envs):
    env = envs("daemon-sqlite", instance_yaml=instance_yaml(postgres=False))
    daemon = Daemon(env.home, env.instance, env.home.parent / "daemon-sqlite.log")
    daemon.start()
    try:
        yield env, daemon
    finally:
        daemon.stop_all()


@pytest.mark.timeout(mode.timeout(per_trial_seconds=120, fixed_seconds=120))
def test_daemon_killed_and_restarted_mid_request_finishes_every_cell_once(sqlite_daemon_env, trials):
    env, daemon = sqlite_daemon_env
    rng = random.Random(7)

    def kill_and_restart(_seen: str) -> None:
        daemon.kill()
        daemon.start()

    with trials("service.daemon_killed") as klass:
        for n in range(requests_needed()):
            run_request_under_faults(env, daemon, days_for(n), kill_and_restart, klass, f"request {n}", rng)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- PostgreSQL restart: last test of the session ------------------------------------------------------------


def pg_cluster() -> list[str]:
    """``pg_ctlcluster VERSION main`` for the local server (15 here, as in .ci/run)."""
    versions = sorted(os.listdir("/etc/postgresql")) if os.path.isdir("/etc/postgresql") else []
    return ["pg_ctlcluster", versions[0] if versions else "15", "main"]


def restart_postgres() -> None:
    result = subprocess.run([*pg_cluster(), "restart"], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:  # no systemd to redirect to: drive the cluster directly
        subprocess.run([pg_cluster()[0], "--skip-systemctl-redirect", *pg_cluster()[1:], "restart"],
                       check=True, timeout=120)
    assert pg_isready(120), "PostgreSQL did not come back within 120 s"


def require_cluster_control() -> None:
    status = None
    if shutil.which("pg_ctlcluster"):
        status = subprocess.run([*pg_cluster(), "status"], capture_output=True, text=True, timeout=30)
    if status is None or status.returncode != 0:
        reason = "cannot control the local PostgreSQL cluster with pg_ctlcluster (not installed, or not ours)"
        if os.environ.get("CI", "").strip().lower() == "true":
            pytest.fail(f"CI=true and {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture
def pg_daemon_env(envs):
    require_cluster_control()
    dagster_url = envs.pg_url()
    env = envs("daemon-pg", backend="postgres", instance_yaml=instance_yaml(postgres=True),
               extra_variables={"DAGSTER_PG_URL": dagster_url})
    daemon = Daemon(env.home, env.instance, env.home.parent / "daemon-pg.log")
    daemon.start()
    try:
        yield env, daemon
    finally:
        daemon.stop_all()
        assert pg_isready(120)
        db.dispose_all()


@pytest.mark.postgres
@pytest.mark.timeout(mode.timeout(per_trial_seconds=150, fixed_seconds=180))
@pytest.mark.pg_restart
def test_postgres_restarted_mid_request_finishes_every_cell_once(pg_daemon_env, trials):
    env, daemon = pg_daemon_env
    rng = random.Random(11)

    def restart(_seen: str) -> None:
        restart_postgres()

    with trials("service.postgres_restarted") as klass:
        for n in range(requests_needed()):
            run_request_under_faults(env, daemon, days_for(n), restart, klass, f"request {n}", rng)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- the driver's answer to a run Dagster failed to launch (deterministic, no daemon) -------------------------


def test_a_run_that_failed_before_writing_is_resubmitted_under_the_next_round_key_at_most_twice(env):
    from backfill_assets.engine.plan.driver_tick import tick
    from backfill_assets.engine.plan.planning import CellFacts
    from backfill_assets.engine.plan.settling import RunView
    from backfill_assets.engine.plan.tick_settlement import MAX_RELAUNCHES

    day = "2022-09-07"
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", day, "--to", day,
                              "--requested-by", "reliability")["request_id"]
    ledger = Ledger(env.catalog)
    runs: dict[str, RunView] = {}

    def one_tick(version_state: str | None = None):
        record = ledger.get(request_id)
        result = tick(GRAPH, record, ledger.cells(request_id), runs, lambda a, p, r: version_state,
                      lambda a, p: CellFacts(), "reliability-code")
        ledger.update_cells(request_id, result.cell_updates)
        if result.status:
            ledger.set_status(request_id, *result.status)
        return result

    keys = []
    for round_no in range(1, MAX_RELAUNCHES + 2):
        [submission] = one_tick().submissions
        assert submission.run_key == f"{request_id}/{day}/{round_no}"
        keys.append(submission.run_key)
        runs[submission.run_key] = RunView(f"run{round_no}", submission.run_key, day, "FAILURE")
        result = one_tick()  # the failed run is settled; nothing is resubmitted in the same tick
        assert result.submissions == []
        [cell] = ledger.cells(request_id)
        if round_no <= MAX_RELAUNCHES:
            assert cell.decision == M.PENDING and "failed before writing" in cell.reason, cell
    [cell] = ledger.cells(request_id)
    assert cell.decision == M.FAILED and cell.dagster_run_id == f"run{MAX_RELAUNCHES + 1}", cell
    assert ledger.get(request_id).status == M.REQUEST_FAILED and len(set(keys)) == MAX_RELAUNCHES + 1


def test_a_run_that_wrote_a_version_before_failing_is_not_resubmitted(env):
    from backfill_assets.engine.plan.driver_tick import tick
    from backfill_assets.engine.plan.planning import CellFacts
    from backfill_assets.engine.plan.settling import RunView

    day = "2022-09-08"
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", day, "--to", day,
                              "--requested-by", "reliability")["request_id"]
    ledger = Ledger(env.catalog)
    first = tick(GRAPH, ledger.get(request_id), ledger.cells(request_id), {}, lambda a, p, r: None,
                 lambda a, p: CellFacts(), "reliability-code")
    ledger.update_cells(request_id, first.cell_updates)
    key = first.submissions[0].run_key
    runs = {key: RunView("run1", key, day, "FAILURE")}
    second = tick(GRAPH, ledger.get(request_id), ledger.cells(request_id), runs, lambda a, p, r: "ABANDONED",
                  lambda a, p: CellFacts(), "reliability-code")
    ledger.update_cells(request_id, second.cell_updates)
    [cell] = ledger.cells(request_id)
    assert cell.decision == M.FAILED and second.submissions == [], cell
