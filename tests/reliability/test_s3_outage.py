"""The warehouse's S3 endpoint goes down mid-request and comes back, under a real dagster-daemon.

The warehouse is ``s3://`` on the session's S3 server, reached through an outage proxy (tests/outage_proxy.py):
``down`` refuses new connections and resets open ones, ``up`` listens again on the same port, and the bucket
keeps every object throughout. A trial is one request of ``order_facts`` over four days that were published
before (so each has a previous version to keep serving). Its first steps are held right after writing
``data.parquet`` (``BACKFILL_HOLD``), the endpoint goes down, the steps are released into the outage — the
manifest write is the first call to fail — and the endpoint comes back:

- long (trials 0, 2, 4): once a run of the request has failed, every retry of its step spent in the outage;
  meanwhile ``read`` answers one ``error:`` line naming the warehouse and the endpoint;
- short (trials 1, 3): ``SHORT_OUTAGE_SECONDS`` from down to up, less than the 2 s a step's three attempts
  take at the least (two 1 s RetryPolicy delays), so no run can fail.

Afterwards: every step attempt that failed says which storage failed (its Dagster error and its abandoned
version's error); the attempts caught mid-write are ABANDONED, their data object orphaned and never pointed to;
every failed cell still serves its previous version; ``request create --reprocess failed`` (long) publishes
exactly the failed cells; and across the request and its follow-up every cell is published exactly once,
reconcile is exact (no gap, no duplicate publish), and every version a reader can reach verifies by sha256 —
counted as lost, duplicated and partial publishes (target 0 of each) in docs/RELIABILITY.md.
"""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest
from upath import UPath

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import ENV_WAREHOUSE
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.storage import DATA_FILE, MANIFEST_FILE
from backfill_assets.engine.wap.faults import AFTER_DATA_FILE, ENV_HOLD
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from tests.orders import run_chunk
from tests.outage_proxy import OutageProxy
from tests.s3 import RETRY_VARIABLES, environment_for, forget_s3_clients

from . import mode
from .daemon import Daemon, explain_runs, instance_yaml, request_runs, wait_until_closed
from .invariants import assert_catalog_consistent, assert_readers_see
from .publish_counts import count_publishes

pytestmark = pytest.mark.daemon

DAYS = ["2022-09-03", "2022-09-04", "2022-09-05", "2022-09-06"]
TRIALS = mode.trials_of(slow=5, normal=1)
# Less than the two 1 s RetryPolicy delays between a step's three attempts: a step that fails in the outage finds
# the endpoint back on a retry. (Nothing else may lengthen a short outage: a CLI call in it could take 3 s.)
SHORT_OUTAGE_SECONDS = 1.0
HOLD_WAIT_SECONDS = 90.0
FAILED_RUN_WAIT_SECONDS = 120.0
REQUEST_TIMEOUT = 180.0
POLL_SECONDS = 0.1
# What a failed attempt must say: which storage failed (the rest of the line is the backend's reason).
STORAGE_FAILED = "warehouse storage {root} failed while"


@pytest.fixture
def s3_daemon_env(envs, s3_server, tmp_path):
    """A real daemon whose runs write to S3 through the outage proxy; the four days already published."""
    proxy = s3_server.outage_proxy(tmp_path)
    root = s3_server.new_root()
    hold = tmp_path / "hold-after-data-file"
    try:
        env = envs("s3-outage", instance_yaml=instance_yaml(postgres=False),
                   extra_variables={ENV_WAREHOUSE: root, **environment_for(proxy.endpoint), **RETRY_VARIABLES})
        forget_s3_clients()  # this process's reads and CLI calls go through the proxy as well
        # One batched run (not one run per day): the previous version of each day, to keep serving when it fails.
        seeded = run_chunk(env.instance, {RAW_ORDERS: DAYS, ORDER_FACTS: DAYS})
        assert seeded.success, seeded.failure
        # Only the daemon (and the runs it launches) holds at the boundary, and only while the file exists.
        env.monkeypatch.setenv(ENV_HOLD, f"{AFTER_DATA_FILE}={hold}")
        daemon = Daemon(env.home, env.instance, env.home.parent / "daemon-s3-outage.log")
        try:
            daemon.start()
        finally:
            env.monkeypatch.delenv(ENV_HOLD)
        try:
            yield env, daemon, proxy, root, hold
        finally:
            daemon.stop_all()
    finally:
        proxy.stop()
        forget_s3_clients()


def create_request(env, reprocess: str) -> str:
    return env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", DAYS[0], "--to", DAYS[-1],
                        "--reprocess", reprocess, "--max-active", "2", "--partitions-per-run", "1",
                        "--requested-by", "reliability")["request_id"]


def wait_for_held_writes(env, request_id: str) -> list[str]:
    """Block until a step of the request has written its data object and holds before the manifest; returns the
    data objects of every attempt holding there."""
    deadline = time.monotonic() + HOLD_WAIT_SECONDS
    while time.monotonic() < deadline:
        held = []
        for v in env.catalog.versions_of_request(request_id):
            if v.state == VersionState.WRITING.value:
                folder = env.warehouse.version_dir(v.asset, v.partition_key, v.logical_run_id, int(v.attempt_no))
                if (folder / DATA_FILE).exists():
                    held.append(str(folder / DATA_FILE))
        if held:
            return held
        time.sleep(POLL_SECONDS)
    raise AssertionError(f"no step of {request_id} reached the hold within {HOLD_WAIT_SECONDS} s")


def wait_for_a_failed_run(env, daemon: Daemon, request_id: str) -> None:
    deadline = time.monotonic() + FAILED_RUN_WAIT_SECONDS
    while time.monotonic() < deadline:
        if any(r.status == dg.DagsterRunStatus.FAILURE for r in request_runs(env.instance, request_id)):
            return
        assert daemon.alive(), "dagster-daemon died during the outage"
        time.sleep(POLL_SECONDS)
    raise AssertionError(f"no run of {request_id} failed within {FAILED_RUN_WAIT_SECONDS} s of outage\n"
                         f"{explain_runs(env.instance, request_id)}")


def assert_read_names_the_storage(env, root: str, proxy: OutageProxy) -> None:
    """What a user sees reading a day while the endpoint is down: one error line naming warehouse and endpoint."""
    result = env.cli("read", ORDER_FACTS, DAYS[0], "--format", "json", "--reader", "reliability")
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, f"exit {result.exit_code}: {result.output}"
    assert lines[0].startswith("error: " + STORAGE_FAILED.format(root=root)) and proxy.endpoint in lines[0], lines


def step_errors(env, request_id: str) -> list[list[str]]:
    """Every failed step attempt of the request's runs (retried or not) as Dagster shows it: its error's chain of
    messages, outermost first (Dagster's retry wrapper, then what the step raised, then that error's cause)."""
    errors = []
    for run in request_runs(env.instance, request_id):
        for record in env.instance.all_logs(run.run_id):
            event = record.dagster_event
            if event is None:
                continue
            if event.event_type == dg.DagsterEventType.STEP_FAILURE:
                errors.append(_messages(event.step_failure_data.error))
            elif event.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY:
                errors.append(_messages(event.step_retry_data.error))
    return errors


def _messages(error) -> list[str]:
    chain = []
    while error is not None:
        chain.append(error.message.strip())
        error = error.cause or error.context
    return chain


def names_the_storage_first(chain: list[str], named: str) -> bool:
    """The step's own error names the storage, ahead of the backend's (botocore's) exception, its cause."""
    ours = next((i for i, message in enumerate(chain) if named in message), None)
    return ours is not None and not any("botocore" in message for message in chain[:ours])


def assert_failures_name_the_storage(env, request_id: str, root: str, held: list[str]) -> int:
    """Every failed attempt says which storage failed; the attempts caught mid-write are ABANDONED with their data
    object orphaned (never pointed to) and no manifest. Returns how many step attempts failed."""
    named = STORAGE_FAILED.format(root=root)
    errors = step_errors(env, request_id)
    unclear = [chain for chain in errors if not names_the_storage_first(chain, named)]
    assert not unclear, f"step errors that do not name the storage: {unclear}"
    own = env.catalog.versions_of_request(request_id)
    for v in own:
        if v.state == VersionState.ABANDONED.value:
            assert v.error and named in v.error, f"{v.version_id} abandoned without naming the storage: {v.error}"
    for data_object in held:
        [v] = [v for v in own if _data_object(env, v) == data_object]
        if v.state == VersionState.ABANDONED.value:
            assert UPath(data_object).exists(), "the held attempt's data object vanished"
            assert not (UPath(data_object).parent / MANIFEST_FILE).exists(), "a manifest was written in the outage"
            assert env.catalog.current(v.asset, v.partition_key).version_id != v.version_id
    return len(errors)


def _data_object(env, v) -> str:
    return str(env.warehouse.version_dir(v.asset, v.partition_key, v.logical_run_id, int(v.attempt_no)) / DATA_FILE)


def assert_exact(env, request_id: str, complete: bool) -> dict:
    report = env.cli_json("reconcile", request_id, expect=(0, 1))
    t = report["totals"]
    assert report["complete"] == complete and t["gaps"] == 0 and t["duplicate_publishes"] == 0, (
        f"reconcile {request_id}: complete={report['complete']} {t}\ngaps: {report['gaps']}"
    )
    return report


def outage_trial(env, daemon: Daemon, proxy: OutageProxy, root: str, hold: Path, long: bool, klass) -> None:
    env.activate()
    env.close_open_requests()
    serving_before = {day: env.catalog.current(ORDER_FACTS, day).version_id for day in DAYS}
    hold.touch()
    request_id = create_request(env, "completed")
    try:
        held = wait_for_held_writes(env, request_id)
        proxy.down()
        try:
            if long:
                assert_read_names_the_storage(env, root, proxy)
            hold.unlink()  # the held steps go on into the outage: their manifest write is the first call to fail
            if long:
                wait_for_a_failed_run(env, daemon, request_id)
            else:
                time.sleep(SHORT_OUTAGE_SECONDS)
        finally:
            proxy.up()
    finally:
        hold.unlink(missing_ok=True)

    status = wait_until_closed(env.catalog, request_id, daemon, REQUEST_TIMEOUT)
    cells = Ledger(env.catalog).cells(request_id)
    failed = [c.partition_key for c in cells if c.decision == M.FAILED]
    assert status == (M.REQUEST_FAILED if failed else M.COMPLETED), status  # done means published
    others = [(c.partition_key, c.decision, c.reason) for c in cells if c.decision not in (M.PUBLISHED, M.FAILED)]
    assert not others, others
    explain = explain_runs(env.instance, request_id)
    if long:
        assert failed, f"the outage outlasted a step's retries, yet no cell failed\n{explain}"
    else:
        assert not failed, f"a {SHORT_OUTAGE_SECONDS} s outage failed {failed}: the step's retry should ride it out"
    attempts_failed = assert_failures_name_the_storage(env, request_id, root, held)
    klass.note(f"{'long' if long else 'short'} outage: {'some' if failed else 'no'} cell failed, "
               f"{'some' if attempts_failed else 'no'} step attempt failed")
    for day in failed:  # the previous version kept serving, whole
        assert_readers_see(env, ORDER_FACTS, day, {serving_before[day]})
    assert_exact(env, request_id, complete=not failed)

    requests = [request_id]
    if failed:  # what a user does once the storage is back
        retry_id = create_request(env, "failed")
        requests.append(retry_id)
        assert wait_until_closed(env.catalog, retry_id, daemon, REQUEST_TIMEOUT) == M.COMPLETED
        redone = {c.partition_key: c.decision for c in Ledger(env.catalog).cells(retry_id)}
        assert {d for d, decision in redone.items() if decision == M.PUBLISHED} == set(failed), redone
        assert_exact(env, retry_id, complete=True)

    counts = count_publishes(env, requests, [(ORDER_FACTS, day) for day in DAYS])
    for name, n in counts.as_tallies().items():
        klass.tally(name, n)
    assert (counts.lost, counts.duplicated, counts.partial, counts.stuck) == (0, 0, [], []), counts
    assert_catalog_consistent(env.catalog)
    for day in DAYS:  # readers now see the one version the requests published for the day
        [published] = [v for r in requests for v in env.catalog.versions_of_request(r, published_only=True)
                       if v.partition_key == day]
        assert_readers_see(env, ORDER_FACTS, day, {published.version_id})


@pytest.mark.timeout(mode.timeout(per_trial_seconds=150, fixed_seconds=120, trials=TRIALS))
def test_s3_down_mid_request_fails_or_retries_cleanly_and_the_request_completes_once_it_is_back(s3_daemon_env,
                                                                                                trials):
    env, daemon, proxy, root, hold = s3_daemon_env
    with trials("service.s3_outage") as klass:
        for i in range(TRIALS):
            long = i % 2 == 0
            with klass.trial(f"{i} ({'long' if long else 'short'} outage)"):
                outage_trial(env, daemon, proxy, root, hold, long, klass)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"
