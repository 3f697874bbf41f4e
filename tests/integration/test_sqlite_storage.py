"""The shipped dagster.yaml's storage: Dagster's SQLite event log, run and schedule storage, same files in the same
place, keeping one engine per database file and its connections open (Dagster's creates an engine and opens the
file for every use)."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import yaml

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
    """The webserver follows a run by watching its database file; the writer keeps its connection open."""
    home = _configure(tmp_path / "home", shipped_storage())
    seen: list[str] = []
    with dg.DagsterInstance.from_config(str(home)) as writer, dg.DagsterInstance.from_config(str(home)) as watcher:
        run = writer.create_run_for_job(hello)
        writer.report_engine_event("first", run)
        watcher.watch_event_logs(run.run_id, None, lambda event, _cursor: seen.append(event.message))
        writer.report_engine_event("second", run)
        deadline = time.monotonic() + 10
        while "second" not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
        watcher.end_watch_event_logs(run.run_id, seen.append)
    assert "second" in seen


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
