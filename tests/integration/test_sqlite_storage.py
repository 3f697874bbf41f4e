"""The shipped dagster.yaml's storage: Dagster's SQLite event log, run and schedule storage, same files in the same
place, keeping one engine per database file and its connections open (Dagster's creates an engine and opens the
file for every use)."""

from __future__ import annotations

import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from sqlalchemy import text

from backfill_assets.integration.runs.dagster_adapter import (
    KEPT_ENGINES,
    SqliteEventLogReusingEngines,
    SqliteRunStorageKeepingConnections,
    SqliteScheduleStorageKeepingConnections,
)
from tests.homes import shipped_storage

DAGSTER_DEFAULT = {"telemetry": {"enabled": False}}


@dg.op
def say_hello(context) -> None:
    context.log.info("hello")


@dg.job
def hello():
    say_hello()


def _configure(home: Path, config: dict) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))
    return home


def _logged(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.user_message for e in instance.all_logs(run_id) if e.user_message == "hello"]


def test_it_reads_and_writes_the_files_dagsters_default_event_log_does(tmp_path):
    home = _configure(tmp_path / "home", DAGSTER_DEFAULT)
    with dg.DagsterInstance.from_config(str(home)) as default:
        before = hello.execute_in_process(instance=default).run_id
    _configure(home, shipped_storage())
    with dg.DagsterInstance.from_config(str(home)) as ours:
        assert isinstance(ours.event_log_storage, SqliteEventLogReusingEngines)
        assert isinstance(ours.run_storage, SqliteRunStorageKeepingConnections)
        assert isinstance(ours.schedule_storage, SqliteScheduleStorageKeepingConnections)
        assert [r.run_id for r in ours.get_runs()] == [before]
        assert _logged(ours, before) == ["hello"]
        after = hello.execute_in_process(instance=ours).run_id
        ours.run_storage.set_cursor_values({"written-by": "ours"})
    _configure(home, DAGSTER_DEFAULT)
    with dg.DagsterInstance.from_config(str(home)) as default:
        assert {r.run_id for r in default.get_runs()} == {before, after}
        assert _logged(default, after) == ["hello"]
        assert default.run_storage.get_cursor_values({"written-by"}) == {"written-by": "ours"}
        assert default.schedule_storage.all_instigator_state() == []


def test_each_database_file_keeps_one_engine(tmp_path):
    home = _configure(tmp_path / "home", shipped_storage())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_id = hello.execute_in_process(instance=instance).run_id
        storage = instance.event_log_storage
        engines = []
        for connection in (storage.run_connection(run_id), storage.run_connection(run_id), storage.index_connection()):
            with connection as conn:  # one at a time: Dagster's storage holds a lock while a connection is open
                engines.append(conn.engine)
        assert engines[1] is engines[0]  # its compiled statements are kept
        assert engines[2] is not engines[0]
        for n in range(KEPT_ENGINES + 5):
            with storage.run_connection(f"run-{n}"):
                pass
        assert len(storage._engines) == KEPT_ENGINES  # a long-lived daemon does not keep one per run forever


def test_every_kept_connection_is_wal_and_flushes_the_disk_at_checkpoints_only(tmp_path):
    """SQLite's default (synchronous FULL) flushes the disk at every commit: nine per gated asset-day in a run's
    event log. Each file is WAL (Dagster makes it so when it creates it), where NORMAL keeps every commit through a
    killed process and never corrupts the file."""
    home = _configure(tmp_path / "home", shipped_storage())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_id = hello.execute_in_process(instance=instance).run_id
        events = instance.event_log_storage
        connections = [events.run_connection(run_id), events.index_connection(),
                       instance.run_storage.connect(), instance.schedule_storage.connect()]
        for connection in connections:
            with connection as conn:
                assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
                assert conn.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL


def test_it_uses_the_directory_of_the_instance_it_belongs_to_not_dagster_home(tmp_path, monkeypatch):
    home = _configure(tmp_path / "home", shipped_storage())
    elsewhere = _configure(tmp_path / "elsewhere", shipped_storage())
    monkeypatch.setenv("DAGSTER_HOME", str(elsewhere))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run_id = hello.execute_in_process(instance=instance).run_id
        ref = instance.get_ref()
    assert (home / "history" / "runs" / f"{run_id}.db").is_file()
    assert not (elsewhere / "history").exists()
    monkeypatch.delenv("DAGSTER_HOME")
    with dg.DagsterInstance.from_ref(ref) as again:  # what a run worker or a step process opens
        assert _logged(again, run_id) == ["hello"]



def test_another_process_watching_a_run_sees_its_events_while_the_writer_keeps_its_connection(tmp_path):
    """The webserver follows a run by watching its database file; the writer keeps its connection open, its events
    in the WAL, and marks the file modified after each write: the watcher reads each event, the last of a burst
    too, within a fraction of a second (a few milliseconds here)."""
    home = _configure(tmp_path / "home", shipped_storage())
    seen: dict[str, float] = {}
    with dg.DagsterInstance.from_config(str(home)) as writer, dg.DagsterInstance.from_config(str(home)) as watcher:
        run = writer.create_run_for_job(hello)
        writer.report_engine_event("first", run)

        def follow(event, _cursor) -> None:
            seen.setdefault(event.message, time.monotonic())

        watcher.watch_event_logs(run.run_id, None, follow)
        lags = []
        for burst in (["second"], [f"burst {n}" for n in range(20)]):
            written = time.monotonic()
            for message in burst:
                writer.report_engine_event(message, run)
            while burst[-1] not in seen and time.monotonic() < written + 10:
                time.sleep(0.01)
            lags.append(seen.get(burst[-1], float("inf")) - written)
        watcher.end_watch_event_logs(run.run_id, follow)
    assert max(lags) < 1.0, lags


def test_a_forked_child_opens_its_own_connections_and_leaves_its_parents_alone(tmp_path):
    home = _configure(tmp_path / "home", shipped_storage())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.create_run_for_job(hello)
        instance.report_engine_event("parent before", run)
        parents = {id(engine) for engine in instance.event_log_storage._engines.engines()}
        pid = os.fork()
        if pid == 0:  # the child: write through the same storage object, then leave without clean-up
            try:
                instance.report_engine_event("child", run)
                own = {id(engine) for engine in instance.event_log_storage._engines.engines()}
                os._exit(0 if own and not own & parents else 3)
            except BaseException:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        instance.report_engine_event("parent after", run)  # the parent's connection still works
        messages = [e.message for e in instance.all_logs(run.run_id)]
    written = ["parent before", "child", "parent after"]
    assert [m for m in messages if m in written] == written


def test_the_run_storage_serves_threads_at_once_and_a_connection_opened_inside_another(tmp_path):
    """The daemon's loops and the webserver's requests use the run storage from many threads at a time."""
    home = _configure(tmp_path / "home", shipped_storage())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = instance.run_storage

        def work(n: int) -> int:
            for i in range(20):
                storage.set_cursor_values({f"thread-{n}": str(i)})
                instance.get_runs(limit=5)
            return int(storage.get_cursor_values({f"thread-{n}"})[f"thread-{n}"])

        with ThreadPoolExecutor(max_workers=8) as pool:
            assert list(pool.map(work, range(8))) == [19] * 8
        with storage.connect() as outer, storage.connect() as inner:  # two connections, one thread
            assert outer.connection.dbapi_connection is not inner.connection.dbapi_connection


def test_a_table_the_index_has_is_remembered_and_one_it_lacks_asked_again(tmp_path):
    """Dagster asks before storing every check evaluation; a table seen once is not looked up again."""
    home = _configure(tmp_path / "home", shipped_storage())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        assert storage.has_table("asset_check_executions")
        assert storage.has_table("asset_check_executions")
        assert not storage.has_table("made_later")
        with storage.index_connection() as conn:  # a migration in another process adds it
            conn.execute(text("CREATE TABLE made_later (id INTEGER)"))
        assert storage.has_table("made_later")


@dg.asset(check_specs=[dg.AssetCheckSpec("positive", asset="numbers")], code_version="1")
def numbers():
    return dg.MaterializeResult(check_results=[dg.AssetCheckResult(passed=True)])


@dg.op(out=dg.Out(dg.Nothing))
def judge_numbers(context):
    """What a chunk run's op does: evaluations no check spec planned, one per day, and one with no partition."""
    for day, passed in (("2022-09-01", True), ("2022-09-02", False), (None, True)):
        yield dg.AssetCheckEvaluation(asset_key=dg.AssetKey("numbers"), check_name="positive", passed=passed,
                                      partition=day, metadata={"day": str(day)})


@dg.job
def judging():
    judge_numbers()


def _check_rows(instance: dg.DagsterInstance) -> list[tuple]:
    with instance.event_log_storage.index_connection() as conn:
        rows = conn.execute(text(
            "SELECT asset_key, check_name, partition, execution_status, evaluation_event, evaluation_event_timestamp, "
            "evaluation_event_storage_id IS NOT NULL, materialization_event_storage_id IS NOT NULL "
            "FROM asset_check_executions ORDER BY id"
        )).all()
    events = [dg.deserialize_value(row[4], dg.EventLogEntry) for row in rows]
    for row, event in zip(rows, events, strict=True):  # the row's time is its event's, in UTC
        assert row[5].startswith(time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(event.timestamp)))
    return [(*row[:4], event.get_dagster_event().event_specific_data.metadata, *row[6:]) for row, event in
            zip(rows, events, strict=True)]


def test_check_evaluations_are_stored_as_dagsters_own_event_log_stores_them(tmp_path):
    """Planned by an asset step (the planned row updated) or not (an op's, a row inserted), partitioned or not."""
    stored = []
    for name, config in (("dagster", DAGSTER_DEFAULT), ("ours", shipped_storage())):
        with dg.DagsterInstance.from_config(str(_configure(tmp_path / name, config))) as instance:
            assert dg.materialize([numbers], instance=instance).success
            assert judging.execute_in_process(instance=instance).success
            stored.append(_check_rows(instance))
    assert stored[1] == stored[0]
    assert [(r[2], r[3], r[5], r[6]) for r in stored[1]] == [
        (None, "SUCCEEDED", True, True), ("2022-09-01", "SUCCEEDED", True, False),
        ("2022-09-02", "FAILED", True, False), (None, "SUCCEEDED", True, False),
    ]


@dg.asset(partitions_def=dg.DailyPartitionsDefinition("2022-09-01", end_offset=1), code_version="1",
          check_specs=[dg.AssetCheckSpec("counted", asset="daily_numbers")])
def daily_numbers(context):
    context.log.info(f"counting {context.partition_key}")
    return dg.MaterializeResult(data_version=dg.DataVersion(context.partition_key), metadata={"rows": 3},
                                check_results=[dg.AssetCheckResult(passed=False)])


@dg.op(out=dg.Out(dg.Nothing))
def report_a_day(context):
    """What a chunk run's op does for a day: a materialization, evaluations pointed at it, an observation."""
    context.log.info("gating 2022-09-03")
    yield dg.AssetMaterialization(asset_key="daily_numbers", partition="2022-09-03", metadata={"rows": 4},
                                  tags={"dagster/data_version": "v3", "not/indexed": "x"})
    for passed in (True, False):
        yield dg.AssetCheckEvaluation(asset_key=dg.AssetKey("daily_numbers"), check_name="counted", passed=passed,
                                      partition="2022-09-03")
    yield dg.AssetObservation(asset_key="daily_numbers", partition="2022-09-04", metadata={"rejected": True})


@dg.job
def reporting():
    report_a_day()


# Values that differ between two runs of the same events: ids made at random, clocks, durations, process ids.
_VARYING_KEYS = {"timestamp", "duration_ms", "pid", "start_time", "end_time", "log_key"}
# A duration in a message as Dagster's format_duration writes it: 533ms, 2.1s (a loaded machine), 4m52s, 1h4m.
DURATION = re.compile(r"\b(\d+h)?(\d+m)?\d+(\.\d+)?\s*(ms|s)\b|\b\d+h\d+m\b")


def _normalized(value: Any, run_ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: None if k in _VARYING_KEYS else _normalized(v, run_ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalized(v, run_ids) for v in value]
    if isinstance(value, str):
        if value[:1] in "{[":
            try:
                return _normalized(json.loads(value), run_ids)
            except ValueError:
                pass
        for run_id, name in run_ids.items():
            value = value.replace(run_id, name)
        return DURATION.sub("N ms", value)
    return value


def _table(conn, table: str, run_ids: dict[str, str]) -> list[dict]:
    rows = conn.execute(text(f"SELECT * FROM {table} ORDER BY id")).mappings().all()
    return [{k: (v is not None) if "timestamp" in k else _normalized(v, run_ids) for k, v in row.items()}
            for row in rows]


def _all_rows(instance: dg.DagsterInstance) -> dict[str, list[dict]]:
    """Every row the event log wrote, in the index and in each run's file, with what varies between two
    instances taken out."""
    runs = sorted(instance.get_runs(), key=lambda run: instance.get_run_record_by_id(run.run_id).create_timestamp)
    run_ids = {run.run_id: f"run-{n}" for n, run in enumerate(runs)}
    storage = instance.event_log_storage
    rows = {}
    with storage.index_connection() as conn:
        for table in ("event_logs", "asset_keys", "asset_event_tags", "asset_check_executions"):
            rows[f"index.{table}"] = _table(conn, table, run_ids)
    for run_id, name in run_ids.items():
        with storage.run_connection(run_id) as conn:
            rows[f"{name}.event_logs"] = _table(conn, "event_logs", run_ids)
    return rows


def test_every_event_row_is_the_row_dagsters_own_event_log_writes(tmp_path):
    """Asset and op jobs, planned and unplanned check evaluations, tags indexed or not, an observation, run
    events, log lines and runless events: the same rows, in the run's file and in the index."""
    stored = []
    for name, config in (("dagster", DAGSTER_DEFAULT), ("ours", shipped_storage())):
        with dg.DagsterInstance.from_config(str(_configure(tmp_path / name, config))) as instance:
            assert dg.materialize([numbers], instance=instance).success
            for day in ("2022-09-01", "2022-09-02"):
                assert dg.materialize([daily_numbers], instance=instance, partition_key=day).success
            assert judging.execute_in_process(instance=instance).success
            assert reporting.execute_in_process(instance=instance).success
            instance.report_runless_asset_event(dg.AssetMaterialization("daily_numbers", partition="2022-09-05"))
            instance.report_runless_asset_event(dg.AssetCheckEvaluation(
                asset_key=dg.AssetKey("daily_numbers"), check_name="counted", passed=True, partition="2022-09-05"))
            stored.append(_all_rows(instance))
    assert stored[1].keys() == stored[0].keys()
    for part in stored[0]:
        assert stored[1][part] == stored[0][part], part
    kinds = {row["dagster_event_type"] for row in stored[1]["index.event_logs"]}
    assert {"ASSET_MATERIALIZATION", "ASSET_MATERIALIZATION_PLANNED", "ASSET_OBSERVATION", "ASSET_CHECK_EVALUATION",
            "ASSET_CHECK_EVALUATION_PLANNED", "PIPELINE_SUCCESS"} <= kinds  # a run status: its stored name
    assert [row["key"] for row in stored[1]["index.asset_event_tags"]] == ["dagster/data_version"] * 4
    assert len(stored[1]["index.asset_check_executions"]) == 10
