"""The shipped dagster.yaml's event log: Dagster's SQLite event log, same files in the same place, keeping one engine
per database file (Dagster's creates one per connection, so every statement was compiled again)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml

from backfill_assets.integration.runs.dagster_adapter import KEPT_ENGINES, SqliteEventLogReusingEngines
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
        assert _logged(ours, before) == ["hello"]
        after = hello.execute_in_process(instance=ours).run_id
    _configure(home, DAGSTER_DEFAULT)
    with dg.DagsterInstance.from_config(str(home)) as default:
        assert {r.run_id for r in default.get_runs()} == {before, after}
        assert _logged(default, after) == ["hello"]


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

