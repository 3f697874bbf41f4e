"""Faults at the published table's switch: what readers that know nothing of backfill_assets see of the Iceberg
table when the process switching it dies, when its Iceberg catalog goes away, and when many processes switch it at
once. Engine level, real processes, real pyiceberg/DuckDB/polars readers polling the whole time (a process of
their own, ``tests/tables/table_readers.py``), judged against the catalog by ``tests/tables/reader_checks.py``:
each day one whole version, never one that was never published, the whole table the pointers at some publish log
position, never going back. Trials alternate between a SQLite and a PostgreSQL catalog and Iceberg catalog.

1. Crash points: a publisher process publishes 1–3 days (crossing ``after_publish_commit`` after each, as the gate
   does) and then syncs the table (as the step does), and is SIGKILLed at ``after_publish_commit`` (the pointer
   moved, no sync tried), ``before_table_commit`` (the snapshot's manifests written, the catalog not swapped) or
   ``after_table_commit``. Then the table holds the pointers at its own position (the old days, or the new ones
   after the commit), ``lag`` names exactly the days it is behind, and one sync brings it to the pointers.
2. The Iceberg catalog unreachable: the publisher is held right before its table commit (or before its sync
   begins), the Iceberg catalog is cut off (PostgreSQL: new connections refused, open ones terminated; SQLite: its
   folder gone), the publisher released. Its publish stands, its ``PublishedTables.sync`` reports the failure and
   returns; the table keeps serving its last state; once the catalog is back, one sync converges.
3. A storm: four processes publish and sync overlapping days at once while the readers poll; the conflicts of
   their Iceberg commits are counted. At the end the table is the pointers, every day.
"""

from __future__ import annotations

import queue
import random
import signal
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa

from backfill_assets.engine.wap import faults
from tests.engine.catalog_helpers import PASSED
from tests.tables.pg_table_helpers import written
from tests.tables.reader_checks import judge

from . import mode, table_children
from .table_children import ASSET, frame_for
from .table_harness import (
    TableEnv,
    assert_table_is,
    build_env,
    close_env,
    final_pointers,
    judge_trial,
    versions_in_table,
    wait_for,
)

pytestmark = pytest.mark.postgres

BACKENDS = ("sqlite", "postgres")
DAYS = [f"2022-10-{d:02d}" for d in range(1, 7)]
CRASH_POINTS = (faults.AFTER_PUBLISH_COMMIT, faults.BEFORE_TABLE_COMMIT, faults.AFTER_TABLE_COMMIT)
CRASH_CLASS = {faults.AFTER_PUBLISH_COMMIT: "table.killed_before_sync",
               faults.BEFORE_TABLE_COMMIT: "table.killed_before_commit",
               faults.AFTER_TABLE_COMMIT: "table.killed_after_commit"}
CRASH_TRIALS = mode.trials_of(slow=30, normal=2)
OUTAGE_TRIALS = mode.trials_of(slow=30, normal=2)
STORM_TRIALS = mode.trials_of(slow=10, normal=1)
STORM_PROCESSES = 4
STORM_PUBLISHES = 20 if mode.SLOW else 6
CHILD_SECONDS = 120.0


@pytest.fixture(scope="module")
def table_envs(tmp_path_factory, request):
    """One environment per backend, shared by the module's trials: the table lives on across every fault."""
    root = tmp_path_factory.mktemp("table_faults")
    built: dict[str, TableEnv] = {}
    server = None
    mp = pytest.MonkeyPatch()
    mp.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # the in-process polars reader, as the polling one
    try:
        for backend in BACKENDS:
            server = request.getfixturevalue("pg_server") if backend == "postgres" else server
            built[backend] = build_env(root / backend, backend, server)
        yield built
    finally:
        for env in built.values():
            close_env(env, server)
        mp.undo()


def plan_of(env: TableEnv, label: str, rng: random.Random) -> list[tuple[str, str, int]]:
    days = rng.sample(DAYS, rng.randint(1, 3))
    return [(day, f"{label}-{n}", env.next_seed()) for n, day in enumerate(days)]


def published_by(env: TableEnv, plan: list[tuple[str, str, int]]) -> dict[str, str]:
    """The plan's versions that were published (by their run ids), per day."""
    runs = {run for _, run, _ in plan}
    found = {}
    for day, _, _ in plan:
        for version in env.catalog.versions_of(ASSET, day):
            if version.logical_run_id in runs and version.state == "PUBLISHED":
                found[day] = version.version_id
    return found


def lag_days(env: TableEnv) -> tuple[str, ...]:
    [lag] = env.tables.lag(env.catalog, [ASSET])
    assert lag.error is None, lag.error
    return lag.days_behind


def start_in_line(env: TableEnv) -> None:
    """Each trial starts from a table equal to the pointers (a failed trial before it may have left it behind: that
    trial counted the failure, this one does not inherit it)."""
    if lag_days(env):
        assert env.tables.sync(env.catalog, [ASSET]).ok, "the table cannot be brought in line before the trial"
    assert lag_days(env) == (), "each trial starts from a table in line"


def sync_once_converges(env: TableEnv, behind: tuple[str, ...], what: str) -> None:
    """One sync switches exactly the days the table was behind on, and the table is then the pointers."""
    report = env.tables.sync(env.catalog, [ASSET])
    assert report.ok, f"{what}: the converging sync failed: {report.failed}"
    [result] = report.synced
    assert result.days == behind, f"{what}: the sync switched {result.days}, the table was behind on {behind}"
    assert lag_days(env) == (), f"{what}: still behind after one sync"
    assert_table_is(env, final_pointers(env), f"{what}, after one sync")


# ---- 1. crash points around the switch --------------------------------------------------------------------------


def crash_once(env: TableEnv, forkserver, point: str, label: str, rng: random.Random) -> None:
    start_in_line(env)
    before = final_pointers(env)
    seq_before, _ = versions_in_table(env)
    plan = plan_of(env, label, rng)
    child = forkserver.Process(target=table_children.publish_then_sync, args=(env.config, plan, point, None))
    child.start()
    child.join(CHILD_SECONDS)
    assert child.exitcode == -signal.SIGKILL, f"the publisher ended with {child.exitcode}, not SIGKILL at {point}"

    published = published_by(env, plan)
    expected_days = [plan[0][0]] if point == faults.AFTER_PUBLISH_COMMIT else [day for day, _, _ in plan]
    assert sorted(published) == sorted(expected_days), f"published {sorted(published)}, expected {expected_days}"
    now = {**before, **published}
    assert final_pointers(env) == now
    seq_after, _ = versions_in_table(env)
    committed = point == faults.AFTER_TABLE_COMMIT
    assert (seq_after > seq_before) if committed else (seq_after == seq_before), \
        f"killed at {point}: the table's position went from {seq_before} to {seq_after}"
    if committed:
        assert lag_days(env) == (), "the table committed its switch, yet lag reports it behind"
        assert_table_is(env, now, f"killed at {point}")
    else:
        assert lag_days(env) == tuple(sorted(published)), f"killed at {point}: lag is wrong"
        assert_table_is(env, before, f"killed at {point}: the table keeps its last state")
    sync_once_converges(env, lag_days(env), f"killed at {point}")


@pytest.mark.timeout(mode.timeout(per_trial_seconds=60, trials=CRASH_TRIALS))
@pytest.mark.parametrize("point", CRASH_POINTS)
def test_a_publisher_killed_around_the_switch_never_shows_readers_a_wrong_table(point, table_envs, forkserver,
                                                                                trials):
    rng = random.Random(f"crash-{point}")
    with trials(CRASH_CLASS[point]) as klass:
        for i in range(CRASH_TRIALS):
            backend = BACKENDS[i % len(BACKENDS)]
            env = table_envs[backend]
            with klass.trial(f"{i} ({backend})"):
                try:
                    crash_once(env, forkserver, point, f"crash-{point}-{i}", rng)
                finally:
                    judge_trial(env, f"{point} trial {i}")
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- 2. the Iceberg catalog unreachable ---------------------------------------------------------------------------


def cut_off(env: TableEnv, pg_server) -> None:
    if env.backend == "postgres":
        with pg_server.engine.connect() as admin:
            admin.exec_driver_sql(f'ALTER DATABASE "{env.iceberg_db}" WITH ALLOW_CONNECTIONS false')
            admin.execute(sa.text("SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
                                  "WHERE datname = :d AND pid <> pg_backend_pid()"), {"d": env.iceberg_db})
    else:
        env.iceberg_catalog_dir().rename(env.iceberg_catalog_dir().with_suffix(".away"))


def restore(env: TableEnv, pg_server) -> None:
    if env.backend == "postgres":
        with pg_server.engine.connect() as admin:
            admin.exec_driver_sql(f'ALTER DATABASE "{env.iceberg_db}" WITH ALLOW_CONNECTIONS true')
    else:
        away = env.iceberg_catalog_dir().with_suffix(".away")
        if away.exists():
            away.rename(env.iceberg_catalog_dir())


def outage_once(env: TableEnv, forkserver, pg_server, where: str, label: str, rng: random.Random) -> None:
    start_in_line(env)
    before = final_pointers(env)
    plan = plan_of(env, label, rng)
    hold = env.root / f"hold-{label}"
    hold.touch()
    results = forkserver.Queue()
    child = forkserver.Process(target=table_children.publish_then_sync,
                               args=(env.config, plan, None, f"{where}={hold}", results))
    child.start()
    try:
        wait_for(lambda: Path(f"{hold}.held").exists() or not child.is_alive(), f"the publisher to hold at {where}")
        assert child.is_alive(), f"the publisher ended with {child.exitcode} before its hold at {where}"
        outage = env.readers.announce()
        env.excused.add(outage)
        env.readers.wait_looked(outage)  # nothing begun before the outage is still reading
        cut_off(env, pg_server)
        hold.unlink()
        try:
            report = results.get(timeout=CHILD_SECONDS)
        except queue.Empty:
            raise AssertionError("the publisher's sync did not return while the Iceberg catalog was away") from None
        child.join(CHILD_SECONDS)
        assert child.exitcode == 0, f"the publisher ended with {child.exitcode}"
    finally:
        hold.unlink(missing_ok=True)
        restore(env, pg_server)
    published = published_by(env, plan)
    assert len(published) == len(plan), f"the publish did not stand: {published} of {plan}"
    assert report["synced"] == [] and [table for table, _ in report["failed"]] == [f"published.{ASSET}"], report
    # The readers' own connections may be gone too: errors are excused until each has read again.
    recovered = env.readers.announce()
    env.excused.add(recovered)
    env.readers.wait_looked(recovered, without_error=True)
    env.readers.announce()  # from here on a failed read is a failure
    assert lag_days(env) == tuple(sorted(published)), "the lag does not name the days the failed sync left"
    assert_table_is(env, before, f"catalog away {where}: the table keeps its last state")
    sync_once_converges(env, lag_days(env), f"catalog back after an outage {where}")


@pytest.mark.timeout(mode.timeout(per_trial_seconds=60, trials=OUTAGE_TRIALS))
def test_the_iceberg_catalog_unreachable_mid_publish_leaves_the_table_serving_and_one_sync_converges(
        table_envs, forkserver, pg_server, trials):
    rng = random.Random("outage")
    wheres = (faults.BEFORE_TABLE_COMMIT, faults.AFTER_PUBLISH_COMMIT)
    with trials("table.iceberg_catalog_unreachable") as klass:
        for i in range(OUTAGE_TRIALS):
            backend = BACKENDS[i % len(BACKENDS)]
            where = wheres[(i + 1) // 2 % 2]
            env = table_envs[backend]
            with klass.trial(f"{i} ({backend}, cut off at {where})"):
                try:
                    outage_once(env, forkserver, pg_server, where, f"outage-{i}", rng)
                finally:
                    judge_trial(env, f"outage trial {i}")
                klass.tally("sync failures reported", 1)
        for backend, env in table_envs.items():
            for name, count in env.tallies.items():
                if name == "failed reads during an outage":
                    klass.tally(f"{name} ({backend})", count)
                    env.tallies[name] = 0
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- 3. a storm of conflicting commits ----------------------------------------------------------------------------


def storm_once(env: TableEnv, forkserver, trial: int) -> tuple[dict[str, int], list[str]]:
    # As gc does: every snapshot but the current one expired. A sync's cost grows with the table's snapshots (pyiceberg
    # copies the whole metadata many times per commit), so each storm starts from the same small table.
    env.iceberg.expire(ASSET, datetime.now(timezone.utc))
    barrier = forkserver.Barrier(STORM_PROCESSES)
    results = forkserver.Queue()
    seeds = [100 + trial * STORM_PROCESSES + p for p in range(STORM_PROCESSES)]
    processes = [
        forkserver.Process(target=table_children.storm_publisher,
                           args=(env.config, f"storm{trial}-p{p}", DAYS, STORM_PUBLISHES, seeds[p], barrier, results))
        for p in range(STORM_PROCESSES)
    ]
    for process in processes:
        process.start()
    outs = []
    try:
        for _ in processes:
            outs.append(results.get(timeout=CHILD_SECONDS * 3))
    finally:
        for process in processes:
            process.join(CHILD_SECONDS)
            if process.is_alive():
                process.kill()
    errors = [o["error"] for o in outs if "error" in o]
    assert not errors, errors
    totals = {key: sum(o[key] for o in outs) for key in ("published", "publish_conflicts", "syncs", "commits",
                                                          "conflicts")}
    failed = [why for o in outs for why in o["failed"]]
    totals["syncs failed"] = len(failed)
    assert totals["published"] > 0
    if not failed:  # every process synced after its last publish: the last of them left the table in line
        assert lag_days(env) == (), "every sync succeeded, yet the table is behind after the storm"
    behind = lag_days(env)
    totals["days behind after the storm"] = len(behind)
    sync_once_converges(env, behind, f"after the storm (syncs that failed: {failed[:3]})")
    return totals, failed


@pytest.mark.timeout(mode.timeout(per_trial_seconds=240, trials=STORM_TRIALS))
def test_a_storm_of_conflicting_syncs_leaves_the_table_equal_to_the_pointers(table_envs, forkserver, trials):
    with trials("table.commit_storm") as klass:
        for i in range(STORM_TRIALS):
            backend = BACKENDS[i % len(BACKENDS)]
            env = table_envs[backend]
            with klass.trial(f"{i} ({backend})"):
                try:
                    totals, failed = storm_once(env, forkserver, i)
                finally:
                    judge_trial(env, f"storm trial {i}")
                for name, count in totals.items():
                    klass.tally(name, count)
                for why in failed:  # by design the next sync converges; what made one give up is worth reading
                    klass.note(f"a sync that failed ({backend}): {why[:160]}")
                klass.note(f"{STORM_PROCESSES} processes x {STORM_PUBLISHES} publishes over {len(DAYS)} days")
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- the checks can fail --------------------------------------------------------------------------------------------


def test_the_checks_of_these_trials_fail_on_a_table_that_is_not_the_pointers(table_envs):
    """A table switched by hand to hold a version never published, beside the published one of its day: both the
    table check and the readers' judge say so (the trials above would fail on it)."""
    from pyiceberg.io.pyarrow import parquet_file_to_data_file

    env = table_envs["sqlite"]
    table = env.iceberg.load(ASSET) or _published_table(env)
    day = sorted(final_pointers(env))[0]  # a day the table serves: the stray file makes it two versions at once
    stray = written(env.catalog, env.catalog_warehouse(), ASSET, day, "never-published",
                    frame=frame_for(env.next_seed()))
    assert env.catalog.get(stray.version_id).state == "VERIFYING"
    snapshot_before = table.current_snapshot().snapshot_id
    with table.transaction() as tx, tx.update_snapshot().fast_append() as append:
        append.append_data_file(parquet_file_to_data_file(table.io, tx.table_metadata, str(stray.path)))
    try:
        with pytest.raises(AssertionError, match="two versions in the table at once"):
            assert_table_is(env, final_pointers(env), "a hand-made snapshot")
        history = env.history()
        verdict = judge(history, "pyiceberg", [env.observe("pyiceberg")], by_files=True)
        assert any("versions at once" in v for v in verdict.violations), verdict.violations
        verdict = judge(history, "duckdb", [env.observe("duckdb")], by_files=False)
        assert any("no single version" in v for v in verdict.violations), verdict.violations
        looked = env.readers.announce()
        env.readers.wait_looked(looked)  # the polling readers saw it too
    finally:
        env.iceberg.load(ASSET).manage_snapshots().rollback_to_snapshot(snapshot_before).commit()
        env.catalog.reject(stray.version_id, PASSED, "the checks' own test: never to be published")
    assert_table_is(env, final_pointers(env), "rolled back to the synced snapshot")
    with pytest.raises(AssertionError) as flagged:
        judge_trial(env, "the checks' own test")
    for reader, what in (("pyiceberg", "versions at once"), ("duckdb", "no single version"),
                         ("polars", "no single version")):
        assert f"{reader} #" in str(flagged.value) and what in str(flagged.value), str(flagged.value)[:2000]


def _published_table(env: TableEnv):
    """The table, made by one published day and a sync when no trial ran before this test."""
    from tests.tables.pg_table_helpers import published

    published(env.catalog, env.catalog_warehouse(), ASSET, DAYS[1], "checks-base", frame=frame_for(env.next_seed()))
    assert env.tables.sync(env.catalog, [ASSET]).ok
    return env.iceberg.load(ASSET)
