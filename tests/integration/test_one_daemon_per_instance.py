"""One daemon per instance, with real ``backfill-assets-daemon`` processes on a real home: a second start is refused
naming the first, a ``dagster-daemon run`` already running is named too, a SIGKILLed daemon's lease is taken over
(at once on its own host, after the lease time from anywhere else), and a daemon whose lease is taken stops."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store import db
from backfill_assets.engine.store.daemon_lease import Acquired, DaemonLease, LeaseHolder
from backfill_assets.engine.store.storage import MANIFEST_FILE
from tests.e2e.services import start_daemon, stop_process
from tests.orders import MODULE
from tests.reliability.daemon import Daemon, instance_yaml
from tests.reliability.envs import make_env

pytestmark = pytest.mark.daemon

REFUSAL_TIMEOUT = 300.0
LEASE = 15  # long enough for a start to reach its check (importing Dagster takes seconds)


@pytest.fixture
def home_env(tmp_path, monkeypatch):
    with make_env(tmp_path / "home", monkeypatch, seed=None, instance_yaml=instance_yaml(postgres=False)) as env:
        yield env


def second_start(env, **variables: str) -> subprocess.CompletedProcess:
    """``backfill-assets-daemon run`` on the same home, to its end (a refusal ends it in seconds); one that does
    not end is stopped with what it started (its own session) and fails the test."""
    proc = subprocess.Popen(
        [dagster_bin("backfill-assets-daemon"), "run", "-m", MODULE], env={**os.environ, **variables},
        cwd=str(env.home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=REFUSAL_TIMEOUT)
    except subprocess.TimeoutExpired:
        stop_process(proc)
        pytest.fail(f"the second daemon started instead of refusing: {proc.stderr.read()[-2000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def refusal_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout[-2000:], result.stderr[-2000:])
    [line] = [line for line in result.stderr.splitlines() if "refused" in line]
    assert "Instance is configured with the following daemons" not in result.stdout + result.stderr
    return line


def test_a_second_daemon_on_the_same_home_refuses_to_start_naming_the_first(home_env):
    first = Daemon(home_env.home, home_env.instance, home_env.home.parent / "first.log")
    first.start()
    try:
        line = refusal_line(second_start(home_env))
        assert first.alive()
    finally:
        first.stop_all()
    held = DaemonLease(home_env.catalog).current()
    assert f"pid {first.proc.pid}" in line and f"host {held.who.host}" in line and held.acquired_at in line
    assert "another backfill-assets-daemon drives this instance" in line and "Stop it first" in line
    # A clean stop releases the lease: the next start takes it at once.
    assert held.expires_at <= held.renewed_at or held.expires_at <= utc_now().isoformat()


def test_a_sigkilled_daemon_is_replaced_at_once_on_its_own_host(home_env):
    daemon = Daemon(home_env.home, home_env.instance, home_env.home.parent / "daemon.log")
    daemon.start()
    try:
        killed = daemon.proc.pid
        daemon.kill()
        daemon.start()  # no refusal: the holder's process is known dead on this host
        held = DaemonLease(home_env.catalog).current()
        assert held.who.pid == daemon.proc.pid != killed
    finally:
        daemon.stop_all()


def test_a_lease_held_from_another_host_is_taken_over_once_it_expires(home_env):
    # A daemon on another host, SIGKILLed: nothing renews its lease, and its process cannot be seen from here.
    gone = LeaseHolder("other-host-daemon", "other-host", 777, "other-host|boot|pid:[1]", str(home_env.home))
    assert isinstance(DaemonLease(home_env.catalog).acquire(gone, lease_seconds=LEASE), Acquired)

    line = refusal_line(second_start(home_env, BACKFILL_DAEMON_LEASE_SECONDS=str(LEASE)))
    assert "host other-host, pid 777" in line and "expires at" in line

    time.sleep(max(0.0, LEASE + 0.5 - (time.time() - _acquired(home_env))))
    daemon = Daemon(home_env.home, home_env.instance, home_env.home.parent / "taker.log")
    daemon.start()
    try:
        assert DaemonLease(home_env.catalog).current().who.pid == daemon.proc.pid
    finally:
        daemon.stop_all()


def test_a_daemon_whose_lease_is_taken_over_stops_and_exits_non_zero(home_env, monkeypatch):
    monkeypatch.setenv("BACKFILL_DAEMON_LEASE_SECONDS", "3")
    daemon = Daemon(home_env.home, home_env.instance, home_env.home.parent / "daemon.log")
    daemon.start()
    try:
        # As a daemon elsewhere would once this one went the lease time without renewing (a stall).
        taker = LeaseHolder("taker", "other-host", 778, "other-host|boot|pid:[1]", str(home_env.home))
        lease = DaemonLease(home_env.catalog)
        assert isinstance(lease.acquire(taker, 60, now=utc_now() + timedelta(seconds=10)), Acquired)
        assert daemon.proc.wait(timeout=60) == 1
    finally:
        daemon.stop_all()
    log = daemon.log.read_text()
    assert "stopping: this daemon's lease on the instance was taken over (host other-host, pid 778" in log
    assert lease.current().who == taker


def test_a_running_dagster_daemon_is_named_and_the_start_refused(home_env):
    proc, log = start_daemon(home_env.instance, home_env.home, command="dagster-daemon")
    try:
        line = refusal_line(second_start(home_env))
    finally:
        stop_process(proc)
    assert "a Dagster daemon is running on this instance" in line and "stop that `dagster-daemon run`" in line
    assert DaemonLease(home_env.catalog).current().expires_at <= utc_now().isoformat()  # given back


def _acquired(env) -> float:
    from datetime import datetime

    return datetime.fromisoformat(DaemonLease(env.catalog).current().acquired_at).timestamp()


def test_a_daemon_never_creates_an_empty_catalog_beside_a_warehouse_with_versions(home_env):
    """The daemon opens the catalog first (for its lease): a zero-length catalog.db beside versions is refused there
    too, in one line, and left as it was, never created empty for the sensors to find."""
    catalog_file = Path(make_url(home_env.settings.catalog_url).database)
    attempt = Path(home_env.settings.warehouse_root) / "order_facts/date=2022-10-03/_runs/r1/attempt=1"
    attempt.mkdir(parents=True)
    (attempt / MANIFEST_FILE).write_text("{}")
    db.dispose_all()
    catalog_file.write_bytes(b"")
    result = second_start(home_env)
    assert result.returncode == 1, result.stderr[-2000:]
    [line] = [line for line in result.stderr.splitlines() if "holds versions" in line]
    assert "catalog init --force" in line
    assert catalog_file.stat().st_size == 0
