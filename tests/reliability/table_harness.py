"""The published-table faults' environment: a catalog, a warehouse, an Iceberg catalog (SQLite file or PostgreSQL
database) and a process of readers that know nothing of backfill_assets (``tests/tables/table_readers.py``:
pyiceberg, DuckDB, polars) polling the table the whole time; and the judging of what they saw
(``tests/tables/reader_checks.py``) and of what the table holds, against the catalog.

Each trial is a run of phases (the readers record the phase the test had announced when each observation began):
its observations are those of the phases since the previous trial ended, judged when every reader has finished
one begun after the trial's end. Errors are allowed only in the phases an outage announced.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.iceberg_catalog_rows import current_metadata_location, dispose_readers
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.iceberg_position import seq_in_metadata
from backfill_assets.engine.tables.iceberg_table import (
    CATALOG_NAME,
    SEQ_PROPERTY,
    IcebergTables,
    table_seq,
    tables_location,
)
from backfill_assets.engine.tables.published_tables import PublishedTables
from tests.tables.reader_checks import History, judge, normal_path, pointers_now
from tests.tables.table_readers import Readers

from .table_children import ASSET, MEASURE, NAMESPACE, table_settings

READERS_SCRIPT = Path(__file__).resolve().parents[1] / "tables" / "table_readers.py"
READERS = ("pyiceberg", "duckdb", "polars")
WAIT_SECONDS = 120.0


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


class ReaderProcess:
    """``table_readers.py`` in a process of its own, polling ``published.<ASSET>``; the phase file it reads."""

    def __init__(self, root: Path, config: dict[str, Any]):
        self.out = root / "observations"
        self.out.mkdir(parents=True)
        self.phase_file, self.stop_file, self.log = root / "phase", root / "stop", root / "readers.log"
        self.phase = 0
        self._lines: dict[str, list[dict[str, Any]]] = {r: [] for r in READERS}
        self._offsets: dict[str, int] = {r: 0 for r in READERS}
        config = {**config, "out": str(self.out), "stop_file": str(self.stop_file),
                  "phase_file": str(self.phase_file), "readers": list(READERS)}
        with self.log.open("ab") as log:
            # A script, not a module of the tests package: nothing of backfill_assets on its import path.
            self.proc = subprocess.Popen(
                [sys.executable, str(READERS_SCRIPT), json.dumps(config)], stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "POLARS_ICEBERG_PLANNER": "pyiceberg", "PYTHONPATH": ""}, cwd=str(root),
                start_new_session=True,
            )

    def records(self, reader: str) -> list[dict[str, Any]]:
        path = self.out / f"{reader}.jsonl"
        if path.exists():
            with path.open("rb") as fh:
                fh.seek(self._offsets[reader])
                chunk = fh.read()
            complete = chunk[:chunk.rfind(b"\n") + 1]  # the line being written waits for the next call
            self._offsets[reader] += len(complete)
            self._lines[reader].extend(json.loads(line) for line in complete.splitlines() if line.strip())
        return self._lines[reader]

    def announce(self) -> int:
        """A new phase: every observation that begins from now on records it."""
        self.phase += 1
        staged = self.phase_file.with_suffix(".tmp")
        staged.write_text(str(self.phase))
        staged.replace(self.phase_file)
        return self.phase

    def looked(self, phase: int, without_error: bool = False) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the readers' process exited with {self.proc.returncode}: "
                                 f"{self.log.read_text()[-3000:]}")
        return all(any(r["phase"] >= phase and not (without_error and "error" in r) for r in self.records(reader))
                   for reader in READERS)

    def wait_looked(self, phase: int, without_error: bool = False) -> None:
        """Until every reader has finished an observation it began in ``phase`` or later (then all its earlier ones
        are finished too: each reader observes one at a time)."""
        wait_for(lambda: self.looked(phase, without_error), f"every reader to look in phase {phase}")

    def stop(self) -> None:
        self.stop_file.touch()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)


@dataclass
class TableEnv:
    """One catalog (SQLite or PostgreSQL), its warehouse and the asset's Iceberg table, with its readers."""

    backend: str
    root: Path
    config: dict[str, str]
    catalog: Catalog
    iceberg_db: str | None = None  # the PostgreSQL database of the Iceberg catalog
    readers: ReaderProcess | None = None
    judged_from: int = 0  # the first phase the next trial's judging covers
    excused: set[int] = field(default_factory=set)  # phases whose failed reads an outage explains
    seeds: int = 0
    tallies: dict[str, int] = field(default_factory=dict)

    @property
    def tables(self) -> PublishedTables:
        return PublishedTables(table_settings(self.config))

    @property
    def iceberg(self) -> IcebergTables:
        return IcebergTables(table_settings(self.config))

    def catalog_warehouse(self) -> Warehouse:
        return Warehouse(self.config["warehouse"])

    def next_seed(self) -> int:
        self.seeds += 1
        return self.seeds

    def iceberg_catalog_dir(self) -> Path:
        return self.root / "iceberg"

    def reader_config(self) -> dict[str, Any]:
        return {"catalog_name": CATALOG_NAME, "catalog_uri": self.config["iceberg_url"],
                "tables_location": tables_location(self.config["warehouse"]), "table": f"{NAMESPACE}.{ASSET}",
                "folder": f"{self.config['warehouse']}/{ASSET}", "measure": MEASURE}

    def observe(self, reader: str = "pyiceberg") -> dict[str, Any]:
        """One observation by a reader of ``table_readers.py``, made in this process (the same code, at once)."""
        readers = Readers({**self.reader_config(), "out": "", "stop_file": "", "phase_file": ""})
        observe = {"pyiceberg": readers.pyiceberg_reader, "duckdb": readers.duckdb_reader,
                   "polars": readers.polars_reader}[reader]()
        from pyiceberg.exceptions import NoSuchTableError

        try:
            seen = observe()
        except NoSuchTableError:  # as the polling readers record it: no table yet, no rows
            seen = {"table": False, "days": {}}
        return {"reader": reader, "n": 0, "phase": -1, **seen}

    def history(self) -> History:
        days = sorted({v.partition_key for v in self.all_versions()})
        return History.read(self.catalog, ASSET, days, MEASURE)

    def all_versions(self) -> list:
        from backfill_assets.engine.store.schema import versions

        with self.catalog.engine.connect() as conn:
            keys = conn.execute(sa.select(versions.c.partition_key).where(versions.c.asset == ASSET).distinct())
            days = [k for (k,) in keys]
        return [v for day in days for v in self.catalog.versions_of(ASSET, day)]


def build_env(root: Path, backend: str, pg_server=None) -> TableEnv:
    root.mkdir(parents=True)
    (root / "iceberg").mkdir()
    warehouse = root / "warehouse"
    Warehouse(str(warehouse))
    iceberg_db = None
    if backend == "postgres":
        catalog_url = pg_server.url_for(pg_server.create_database())
        iceberg_db = pg_server.create_database()
        iceberg_url = pg_server.url_for(iceberg_db)
    else:
        catalog_url = f"sqlite:///{root}/catalog.db"
        iceberg_url = f"sqlite:///{root}/iceberg/catalog.db"
    config = {"catalog_url": catalog_url, "warehouse": str(warehouse), "iceberg_url": iceberg_url}
    env = TableEnv(backend, root, config, Catalog(catalog_url), iceberg_db)
    env.iceberg.catalog  # noqa: B018 - creates the Iceberg catalog's own tables before any reader looks
    env.readers = ReaderProcess(root / "readers", env.reader_config())
    return env


def close_env(env: TableEnv, pg_server=None) -> None:
    if env.readers is not None:
        env.readers.stop()
    env.catalog.engine.dispose()
    dispose_readers()
    if env.backend == "postgres":
        for url in (env.config["catalog_url"], env.config["iceberg_url"]):
            pg_server.drop_database(make_url(url).database)
    shutil.rmtree(env.root, ignore_errors=True)


# ---- judging ----------------------------------------------------------------------------------------------------


def versions_in_table(env: TableEnv) -> tuple[int, dict[str, str]]:
    """The table's publish log position and, per day, the version whose file it references (planned by pyiceberg;
    a day with two files is reported as both)."""
    table = env.iceberg.load(ASSET)
    # What ``reconcile`` and ``tables`` read without pyiceberg must be what pyiceberg loads, after every fault.
    location = current_metadata_location(env.config["iceberg_url"], CATALOG_NAME, NAMESPACE, ASSET)
    if table is None:
        assert location is None, f"no table for pyiceberg, but the catalog's row names {location}"
        return 0, {}
    assert location == table.metadata_location, (location, table.metadata_location)
    assert seq_in_metadata(location, SEQ_PROPERTY) == table_seq(table), "the position read without pyiceberg differs"
    by_path = env.history().by_path()
    days: dict[str, str] = {}
    if table.current_snapshot() is not None:
        for task in table.scan().plan_files():
            version = by_path.get(normal_path(task.file.file_path))
            assert version is not None, f"the table references a file of no version: {task.file.file_path}"
            day = version.partition_key
            assert day not in days, f"{day}: two versions in the table at once: {days[day]}, {version.version_id}"
            days[day] = version.version_id
    return table_seq(table), days


def assert_table_is(env: TableEnv, expected: dict[str, str], what: str) -> None:
    """The table holds exactly ``expected`` (day: version; days of empty versions absent) as every reader reads it
    now, and each reading is one the judge accepts."""
    history = env.history()
    wanted = {d: v for d, v in expected.items() if history.versions[v].rows}
    _, held = versions_in_table(env)
    assert held == wanted, f"{what}: the table holds {held}, not {wanted}"
    for reader in READERS:
        record = env.observe(reader)
        verdict = judge(history, reader, [record], by_files=reader == "pyiceberg")
        assert not verdict.errors and not verdict.violations, f"{what}: {verdict.errors + verdict.violations}"
        days = {d: tuple(v) for d, v in record["days"].items()}
        contents = {d: (history.contents[v].rows, history.contents[v].total) for d, v in wanted.items()}
        assert set(days) == set(contents), f"{what}: {reader} reads days {sorted(days)}, not {sorted(contents)}"
        for day, (rows, total) in contents.items():
            assert days[day][0] == rows and abs(days[day][1] - total) < 1e-6, f"{what}: {reader} {day} {days[day]}"


def judge_trial(env: TableEnv, label: str) -> dict[str, int]:
    """Every reader's observations since the previous trial ended, once each has looked after this one; returns
    how many each made."""
    readers = env.readers
    end = readers.announce()
    readers.wait_looked(end)
    history = env.history()
    made: dict[str, int] = {}
    problems: list[str] = []
    for reader in READERS:
        records = [r for r in readers.records(reader) if env.judged_from <= r["phase"] < end]
        excused = [r for r in records if "error" in r and r["phase"] in env.excused]
        verdict = judge(history, reader, [r for r in records if r not in excused], by_files=reader == "pyiceberg")
        made[reader] = verdict.observations
        env.tallies["failed reads during an outage"] = env.tallies.get("failed reads during an outage", 0) \
            + len(excused)
        problems += [f"{reader}: {e}" for e in verdict.errors] + verdict.violations
    env.judged_from = end
    assert not problems, f"{label}: {len(problems)} wrong observation(s):\n" + "\n".join(problems[:20])
    return made


def final_pointers(env: TableEnv) -> dict[str, str]:
    return pointers_now(env.catalog, ASSET)
