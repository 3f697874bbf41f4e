"""Crash points: SIGKILL the step's process at every boundary of write–audit–publish, N times each.

Each trial: a request's run of ``order_facts`` for one day executes in a child process with ``BACKFILL_FAULT`` set
and dies at the boundary. Then, before anything repairs it, every reader (catalog.current, read_verified, the
``read`` CLI) must see the previous complete version or — only once the publish committed — the new complete
one (a downstream ``daily_revenue`` run reads exactly that one); the catalog must have one current version
per cell and no pointer to a missing or incomplete file.
reconcile must report the gap and ``--repair`` must fix it; a new request then publishes cleanly over it.
Trials alternate between a SQLite and a PostgreSQL catalog.
"""

from __future__ import annotations

import signal
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import publish_log
from backfill_assets.engine.store.storage import MANIFEST_FILE
from backfill_assets.engine.wap import faults
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_config_for, run_tags_for
from tests.driver_harness import drive
from tests.orders import GRAPH, run_partitions

from . import children, mode
from .invariants import assert_catalog_consistent, assert_readers_see, materialized_versions

DAY = "2022-09-02"
BACKENDS = ("sqlite", "postgres")
BEFORE_COMMIT = (faults.AFTER_DATA_FILE, faults.AFTER_MANIFEST, faults.AFTER_VERIFYING, faults.IN_PUBLISH_TRANSACTION)
STUCK_STATE = {
    faults.AFTER_DATA_FILE: "WRITING",
    faults.AFTER_MANIFEST: "WRITING",
    faults.AFTER_VERIFYING: "VERIFYING",
    faults.IN_PUBLISH_TRANSACTION: "VERIFYING",
}


def crash_once(env, forkserver, boundary: str) -> None:
    env.activate()
    env.close_open_requests()
    catalog = env.catalog
    before = catalog.current(ORDER_FACTS, DAY)
    assert before is not None, "each trial starts from a published version"

    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY,
                              "--reprocess", "completed", "--requested-by", "reliability")["request_id"]
    record = Ledger(catalog).get(request_id)
    [submission] = drive_request(GRAPH, env.instance, catalog, record, code_version())
    tags = {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}
    child = forkserver.Process(
        target=children.run_partition,
        args=(env.variables, boundary, DAY, [ORDER_FACTS], tags, run_config_for(GRAPH, submission)),
    )
    child.start()
    child.join(120)
    assert child.exitcode == -signal.SIGKILL, f"the step process ended with {child.exitcode}, not SIGKILL"

    # ---- what readers see right after the crash, before any repair ----
    [crashed] = [v for v in catalog.versions_of(ORDER_FACTS, DAY) if v.request_id == request_id]
    committed = boundary not in BEFORE_COMMIT
    if committed:
        assert crashed.state == "PUBLISHED", crashed.state
        allowed = {crashed.version_id}
    else:
        assert crashed.state == STUCK_STATE[boundary], f"{boundary}: crashed attempt is {crashed.state}"
        allowed = {before.version_id}
    assert_readers_see(env, ORDER_FACTS, DAY, allowed)

    attempt_dir = Path(env.warehouse.version_dir(ORDER_FACTS, DAY, crashed.logical_run_id, int(crashed.attempt_no)))
    if boundary == faults.AFTER_DATA_FILE:
        # The half-finished attempt exists on disk, but nothing points at it.
        assert (attempt_dir / "data.parquet").is_file() and not (attempt_dir / MANIFEST_FILE).exists()
        assert crashed.path is None and crashed.sha256 is None
    if boundary == faults.IN_PUBLISH_TRANSACTION:
        with catalog.engine.connect() as conn:
            logged = conn.execute(
                sa.select(publish_log.c.seq).where(publish_log.c.version_id == crashed.version_id)
            ).all()
        assert logged == [], "a rolled-back publish left a publish_log row"
        assert crashed.published_at is None
    in_dagster = crashed.version_id in materialized_versions(env.instance, ORDER_FACTS, DAY)
    assert in_dagster == (boundary == faults.AFTER_EVENT), f"materialization recorded: {in_dagster}"
    # A downstream asset run now reads exactly what readers see.
    [downstream] = run_partitions(env.instance, [DAY], assets=[DAILY_REVENUE])
    assert downstream.success, downstream.failure
    revenue = env.catalog.current(DAILY_REVENUE, DAY)
    assert revenue.dagster_run_id == downstream.run_id
    assert revenue.input_versions == {f"{ORDER_FACTS}/{DAY}": next(iter(allowed))}, revenue.input_versions

    # ---- the run's process vanished: run monitoring marks it failed (done here the way it does it) ----
    [run] = env.instance.get_runs(filters=dg.RunsFilter(tags={T.REQUEST_ID: request_id}))
    assert run.status == dg.DagsterRunStatus.STARTED, run.status
    env.instance.report_run_failed(run)

    # ---- reconcile reports the gap, --repair fixes it ----
    report = env.cli_json("reconcile", request_id, expect=(0, 1))
    gaps = {g["version_id"]: g["gap"] for g in report["gaps"]}
    if boundary in BEFORE_COMMIT:
        assert list(gaps) == [crashed.version_id] and f"stuck in {STUCK_STATE[boundary]}" in gaps[crashed.version_id]
        expected_action = "abandoned"
    elif boundary == faults.AFTER_PUBLISH_COMMIT:
        assert list(gaps) == [crashed.version_id] and "without a Dagster materialization" in gaps[crashed.version_id]
        expected_action = "recorded materialization"
    else:
        assert gaps == {}, gaps
        expected_action = None
    repaired = env.cli_json("reconcile", request_id, "--repair", expect=(0, 1))
    expected_repairs = [{"version_id": crashed.version_id, "action": expected_action}] if expected_action else []
    # A kill after the commit is also before the step's last act, its table sync: the repair brings the table in.
    synced = [(r["table"], r["days"]) for r in repaired["repaired"] if r["action"] == "table synced"]
    assert synced == ([(f"published.{ORDER_FACTS}", [DAY])] if committed else []), repaired["repaired"]
    assert [r for r in repaired["repaired"] if r["action"] != "table synced"] == expected_repairs, repaired["repaired"]
    assert all(t["in_line"] for t in repaired["tables"]), repaired["tables"]
    assert repaired["totals"]["gaps"] == 0, repaired["gaps"]
    state = catalog.get(crashed.version_id).state
    assert state == ("PUBLISHED" if committed else "ABANDONED"), state
    if committed:
        assert crashed.version_id in materialized_versions(env.instance, ORDER_FACTS, DAY)
    serving = assert_readers_see(env, ORDER_FACTS, DAY, allowed)

    # ---- the driver settles the cell and closes the request; a new request then publishes cleanly ----
    drive(env, request_id)
    closed = Ledger(catalog).get(request_id)
    [cell] = Ledger(catalog).cells(request_id)
    # Done means published: a crash that left the day unpublished closes the request failed.
    assert (closed.status, cell.decision) == (("completed", "published") if committed else ("failed", "failed")), cell

    retry_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY,
                            "--reprocess", "completed" if committed else "failed",
                            "--requested-by", "reliability")["request_id"]
    assert len(drive(env, retry_id)) == 1, "the retry submitted no run"
    new = catalog.current(ORDER_FACTS, DAY)
    assert new.request_id == retry_id and new.state == "PUBLISHED", new.as_dict()
    assert new.expected_previous_version_id == serving, "the retry did not replace the version that was serving"
    assert_readers_see(env, ORDER_FACTS, DAY, {new.version_id})
    final = env.cli_json("reconcile", retry_id)
    assert final["complete"] and final["totals"]["gaps"] == 0
    assert_catalog_consistent(catalog)


@pytest.fixture(scope="module")
def prepared(module_envs):
    """One environment per catalog backend with a published order_facts version of DAY (shared by all trials)."""
    built = {}
    for backend in BACKENDS:
        env = module_envs(backend, backend=backend)
        runs = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS])
        assert all(r.success for r in runs), runs
        built[backend] = env
    return built


@pytest.mark.timeout(mode.timeout(per_trial_seconds=30))
@pytest.mark.parametrize("boundary", faults.BOUNDARIES)
def test_a_kill_at_every_step_boundary_never_shows_readers_a_partial_version(boundary, prepared, forkserver, trials):
    with trials(f"crash.{boundary}") as klass:
        for i in range(mode.TRIALS):
            backend = BACKENDS[i % len(BACKENDS)]
            with klass.trial(f"{i} ({backend})"):
                crash_once(prepared[backend], forkserver, boundary)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"
