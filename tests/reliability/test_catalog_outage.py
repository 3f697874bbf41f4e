"""The catalog database becomes unreachable at the moment a step publishes.

The catalog is a PostgreSQL database. The test holds the ``log_head`` row lock, which every publish takes
inside its transaction (after the pointer swap and the state changes, before the commit), so the step's
publish stops there, uncommitted; when the step's version is VERIFYING and its connection is seen waiting on
that lock, the database is cut off: new connections are refused (``ALLOW_CONNECTIONS false``) and every open
connection is terminated — the step's first, and waited for, so releasing the lock cannot let it commit.
Then either the outage ends before the step's RetryPolicy retries (short) or outlasts every retry (long).

Either way the step fails cleanly: the publish transaction rolls back, the pointer does not move, publish_log
and log_head are untouched by it, and the version stays VERIFYING (never PUBLISHED) until the step's retry begins
attempt 2, which abandons it (a long outage leaves it VERIFYING for ``--repair``). Short: the retry is a
new attempt of the same run and publishes. Long: the run fails; a new request publishes; reconcile reports the
orphaned attempt and ``--repair`` abandons it.
"""

from __future__ import annotations

import queue
import time

import dagster as dg
import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store import db
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import log_head, publish_log
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_config_for, run_tags_for
from tests.driver_harness import drive
from tests.orders import GRAPH, run_partitions

from . import children, mode
from .invariants import assert_catalog_consistent, assert_readers_see

DAY = "2022-09-04"
WAIT_SECONDS = 60.0


@pytest.fixture(scope="module")
def pg_env(module_envs, pg_server):
    env = module_envs("outage", backend="postgres")
    runs = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS])
    assert all(r.success for r in runs), runs
    env.extra["db_name"] = make_url(env.variables["BACKFILL_CATALOG_URL"]).database
    return env


def _log_state(catalog) -> tuple[list, int]:
    with catalog.engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(sa.select(publish_log).order_by(publish_log.c.seq)).all()]
        head = conn.execute(sa.select(log_head.c.seq)).scalar_one()
    return rows, head


def outage_once(env, forkserver, pg_server, short: bool) -> None:
    env.activate()
    env.close_open_requests()
    catalog = env.catalog
    db_name = env.extra["db_name"]
    before = catalog.current(ORDER_FACTS, DAY)
    log_before, head_before = _log_state(catalog)
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY,
                              "--reprocess", "completed", "--requested-by", "reliability")["request_id"]
    record = Ledger(catalog).get(request_id)
    [submission] = drive_request(GRAPH, env.instance, catalog, record, code_version())
    tags = {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}

    results = forkserver.Queue()
    lock = catalog.engine.connect()
    lock_txn = lock.begin()
    lock.execute(sa.select(log_head).with_for_update())
    child = forkserver.Process(target=children.run_partition,
                               args=(env.variables, None, DAY, [ORDER_FACTS], tags, run_config_for(GRAPH, submission),
                                     results))
    cut = False
    try:
        child.start()
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            verifying = [v for v in catalog.versions_of(ORDER_FACTS, DAY)
                         if v.request_id == request_id and v.state == "VERIFYING"]
            with pg_server.engine.connect() as admin:
                waiting = admin.execute(sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :d AND wait_event_type = 'Lock'"
                ), {"d": db_name}).scalar()
            if verifying and waiting:
                break
            assert time.monotonic() < deadline and child.is_alive(), "the step never reached publish"
            time.sleep(0.05)
        # Cut the catalog off: refuse new connections, then terminate every open one — the step's first, and
        # waiting until it is gone, so that releasing our lock cannot let its publish commit.
        with pg_server.engine.connect() as admin:
            admin.exec_driver_sql(f'ALTER DATABASE "{db_name}" WITH ALLOW_CONNECTIONS false')
            cut = True
            for waiting_only in (True, False):
                admin.execute(sa.text(
                    "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = :d"
                    + (" AND wait_event_type = 'Lock'" if waiting_only else "")
                ), {"d": db_name})
        if short:
            time.sleep(0.3)  # shorter than the RetryPolicy's delay: the retry finds the catalog back
            _reconnect(pg_server, db_name)
            cut = False
        child.join(120)
    finally:
        if cut:
            _reconnect(pg_server, db_name)
        try:
            lock_txn.rollback()
        except sa.exc.DBAPIError:
            pass
        lock.invalidate()
        lock.close()
        if child.is_alive():
            child.kill()
            child.join()
    db.dispose_all()  # our own pooled connections died with the cut
    try:
        outcome = results.get(timeout=5)
    except queue.Empty:
        pytest.fail(f"the run's process ended with {child.exitcode} without reporting")

    attempts = sorted((v for v in catalog.versions_of(ORDER_FACTS, DAY) if v.request_id == request_id),
                      key=lambda v: v.attempt_no)
    first = attempts[0]
    # Never published. A short outage's retry began attempt 2, which abandoned this one; after a long outage no
    # attempt could begin, so it is still VERIFYING until reconcile --repair.
    expected_state = "ABANDONED" if short else "VERIFYING"
    assert first.state == expected_state and first.published_at is None, (first.state, first.published_at)
    log_after, head_after = _log_state(catalog)
    assert log_after[: len(log_before)] == log_before, "publish_log rows changed"
    assert all(row[3] != first.version_id for row in log_after), "the cut-off publish left a publish_log row"
    assert head_after == head_before + (len(log_after) - len(log_before)), "log_head moved without a log row"
    if short:
        assert outcome["success"], f"the retry should have published: {outcome}"
        assert [v.attempt_no for v in attempts] == [1, 2], [v.version_id for v in attempts]
        retried = attempts[1]
        assert retried.state == "PUBLISHED", retried.state
        assert retried.logical_run_id == first.logical_run_id, "the retry is an attempt of the run"
        assert retried.expected_previous_version_id == before.version_id
        allowed = {retried.version_id}
    else:
        assert not outcome["success"], "the run must fail while the catalog is unreachable"
        assert [v.version_id for v in attempts] == [first.version_id], "a new attempt was registered in the outage"
        failures = env.instance.all_logs(outcome["run_id"], of_type=dg.DagsterEventType.STEP_FAILURE)
        text = " ".join(r.dagster_event.step_failure_data.error.to_string() for r in failures)
        assert "not currently accepting connections" in text, f"the step failure does not say why: {text[:500]}"
        allowed = {before.version_id}
    assert_catalog_consistent(catalog)
    serving = assert_readers_see(env, ORDER_FACTS, DAY, allowed)

    report = env.cli_json("reconcile", request_id, expect=(0, 1))
    if short:
        assert "attempt 2 of the same run began" in first.error, first.error
        assert report["gaps"] == [], report["gaps"]
    else:
        assert [(g["version_id"], "stuck in VERIFYING" in g["gap"]) for g in report["gaps"]] == [
            (first.version_id, True)
        ]
        repaired = env.cli_json("reconcile", request_id, "--repair", expect=(0, 1))
        assert repaired["repaired"] == [{"version_id": first.version_id, "action": "abandoned"}]
    assert catalog.get(first.version_id).state == "ABANDONED"

    drive(env, request_id)
    [cell] = Ledger(catalog).cells(request_id)
    assert cell.decision == ("published" if short else "failed"), cell
    if not short:
        retry_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY,
                                "--reprocess", "failed", "--requested-by", "reliability")["request_id"]
        assert len(drive(env, retry_id)) == 1
        new = catalog.current(ORDER_FACTS, DAY)
        assert new.request_id == retry_id and new.expected_previous_version_id == serving
        serving = new.version_id
    assert_readers_see(env, ORDER_FACTS, DAY, {serving})


def _reconnect(pg_server, db_name: str) -> None:
    with pg_server.engine.connect() as admin:
        admin.exec_driver_sql(f'ALTER DATABASE "{db_name}" WITH ALLOW_CONNECTIONS true')


@pytest.mark.postgres
@pytest.mark.timeout(mode.timeout(per_trial_seconds=60))
def test_catalog_unreachable_at_publish_fails_the_step_cleanly_and_publishes_nothing(pg_env, forkserver, pg_server,
                                                                                   trials):
    with trials("service.catalog_unreachable") as klass:
        for i in range(mode.TRIALS):
            short = i % 2 == 0
            with klass.trial(f"{i} ({'short' if short else 'long'} outage)"):
                outage_once(pg_env, forkserver, pg_server, short)
