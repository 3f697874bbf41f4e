"""A reader that knows nothing of backfill_assets sees exactly the published versions, during a request and after.

One real ``backfill-assets-daemon`` on a fresh home runs the orders example while a separate process
(``table_readers.py``: pyiceberg, pyarrow, pandas, DuckDB and polars only) polls ``published.order_facts``: pyiceberg
scanning to Arrow and pandas, DuckDB on the scan, polars' ``scan_iceberg``, and a naive DuckDB over the warehouse
folder. Meanwhile, on order_facts:

1. a 30-day request, 2022-09-01..30, with a defect on 09-10 (``drop_rows``): that day's version is REJECTED;
2. a second request re-runs 09-08..12 at another FX rate (the rejected day included) and is held with its versions
   written and VERIFYING (the daemon's ``BACKFILL_HOLD``): a request in flight;
3. while it holds, an in-process run of 09-20 is SIGKILLed at ``after_publish_commit``: its pointer moved, its step
   never synced the table; nothing but the daemon (its ``backfill_published_tables`` sensor) can bring the table
   in line before the held request is released, and it must;
4. the held request is released and finishes; 09-09 is rolled back (``backfill-assets rollback``).

After each of these the test waits for every reader to have looked (each observation records the phase the test
had announced when it began). Then every observation is judged against the catalog (``reader_checks``): each day
one whole version, never one that was never published, the whole table the pointers at some publish log position,
never going back. The Iceberg readers must pass; the folder reader, judged by the same rules, must not — the
checker can fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from backfill_assets.engine.model.settings import Settings, TableSettings
from backfill_assets.engine.store import db
from backfill_assets.engine.tables.iceberg_table import CATALOG_NAME, IcebergTables, tables_location
from backfill_assets.engine.wap.faults import AFTER_PUBLISH_COMMIT, AFTER_VERIFYING, ENV_FAULT, ENV_HOLD
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from tests.e2e.conftest import E2E, FINISHED, HOLD_FILE, poll, prepare_home, start_daemon, stop_process, tail
from tests.orders import CALENDAR

from .reader_checks import History, Judged, count_kinds, judge, pointers_now

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("tables/test_readers_during_request")]

REPO = Path(__file__).resolve().parents[2]
READERS_SCRIPT = Path(__file__).with_name("table_readers.py")
ASSET, MEASURE = ORDER_FACTS, "amount_cny"
FIRST, LAST = "2022-09-01", "2022-09-30"
REJECTED_DAY = "2022-09-10"
RERUN = ("2022-09-08", "2022-09-12")
KILLED_DAY = "2022-09-20"
ROLLED_BACK_DAY = "2022-09-09"
ICEBERG_READERS = ("pyiceberg", "duckdb", "polars")
FOLDER_READER = "folder"
TIMEOUT = 150.0  # any one event: a request closing, a reader looking, the sensor's pass (every 30 s)
MONTH_TIMEOUT = 300.0  # the month's request: 30 days of two assets, on 2 shared cores
TABLE_ENV = ("BACKFILL_PUBLISHED_TABLES", "BACKFILL_ICEBERG_CATALOG_URL", "BACKFILL_ICEBERG_CATALOG",
             "BACKFILL_ICEBERG_NAMESPACE", ENV_FAULT)


class ReaderProcess:
    """The readers' process and the files it and the test talk through: the phase the test announces, the stop
    file, and one JSON line per observation per reader."""

    def __init__(self, root: Path, settings: Settings):
        self.out = root / "observations"
        self.out.mkdir(parents=True)
        self.phase_file, self.stop_file = root / "phase", root / "stop"
        self.log = root / "readers.log"
        self.phase = 0
        self.marks: list[tuple[str, float]] = [("start", time.monotonic())]
        tables = TableSettings.from_env(settings)
        config = {
            "catalog_name": CATALOG_NAME, "catalog_uri": tables.iceberg_catalog_url,
            "tables_location": tables_location(settings.warehouse_root),
            "table": f"{tables.iceberg_namespace}.{ASSET}", "folder": f"{settings.warehouse_root}/{ASSET}",
            "measure": MEASURE, "out": str(self.out), "stop_file": str(self.stop_file),
            "phase_file": str(self.phase_file), "readers": [*ICEBERG_READERS, FOLDER_READER],
        }
        with self.log.open("ab") as log:
            # A script, not a module of the tests package: nothing of backfill_assets on its import path.
            self.proc = subprocess.Popen(
                [sys.executable, str(READERS_SCRIPT), json.dumps(config)], stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "POLARS_ICEBERG_PLANNER": "pyiceberg", "PYTHONPATH": ""}, cwd=str(root),
                start_new_session=True,
            )

    def records(self, reader: str) -> list[dict[str, Any]]:
        path = self.out / f"{reader}.jsonl"
        if not path.exists():
            return []
        records = []
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # the line being written
        return records

    def announce(self, what: str) -> None:
        """A new phase: every observation that begins from now on records it."""
        self.marks.append((what, time.monotonic()))
        self.phase += 1
        staged = self.phase_file.with_suffix(".tmp")
        staged.write_text(str(self.phase))
        staged.replace(self.phase_file)
        self.wait_all_looked(what)

    def wait_all_looked(self, what: str) -> None:
        """Until every reader has finished an observation it began in the current phase."""
        phase = self.phase

        def looked() -> bool:
            self.assert_alive()
            return all(any(r["phase"] >= phase for r in self.records(reader))
                       for reader in (*ICEBERG_READERS, FOLDER_READER))

        poll(looked, TIMEOUT, f"every reader to look at the table after {what}", interval=0.1)

    def assert_alive(self) -> None:
        if self.proc.poll() is not None:
            pytest.fail(f"the readers' process exited with {self.proc.returncode}:\n{tail(self.log)}", pytrace=False)

    def stop(self) -> None:
        self.stop_file.touch()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        stop_process(self.proc)


@dataclass
class Scenario:
    e2e: E2E
    readers: ReaderProcess
    history: History
    requests: dict[str, str]
    killed_version: str
    lag_after_kill: tuple[str, ...]
    final_pointers: dict[str, str]
    seconds: float


def start_the_run_to_kill(e2e: E2E) -> tuple[subprocess.Popen, str]:
    """An in-process run of order_facts on KILLED_DAY (another FX rate) in a process of its own, to be SIGKILLed
    right after its publish commit: before its step syncs the table. Returns the process and the version serving
    the day before it."""
    before = e2e.catalog.current(ASSET, KILLED_DAY)
    args = {"partition": KILLED_DAY, "assets": [ASSET], "tags": {},
            "run_config": {"ops": {ASSET: {"config": {"usd_to_cny": 7.7, "eur_to_cny": 8.1}}}}}
    env = {k: v for k, v in os.environ.items() if k != ENV_HOLD}  # the held request's hold is not this run's
    child = subprocess.Popen([sys.executable, "-m", "tests.crash_runner", json.dumps(args)], cwd=REPO,
                             env={**env, ENV_FAULT: AFTER_PUBLISH_COMMIT}, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
    return child, before.version_id


def killed_after_its_publish(e2e: E2E, killing: tuple[subprocess.Popen, str]) -> str:
    """The version the killed run published (its pointer moved); its Dagster run marked failed, as run monitoring
    would."""
    child, before = killing
    try:
        _, stderr = child.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        stop_process(child)
        pytest.fail(f"the run to be killed at {AFTER_PUBLISH_COMMIT} did not end within {TIMEOUT} s")
    assert child.returncode == -signal.SIGKILL, (child.returncode, stderr.decode(errors="replace")[-3000:])
    killed = e2e.catalog.current(ASSET, KILLED_DAY)
    assert killed is not None and killed.version_id != before and killed.state == "PUBLISHED", killed
    run = e2e.instance.get_run_by_id(killed.dagster_run_id)
    assert run is not None, killed.dagster_run_id
    if run.status not in FINISHED:
        e2e.instance.report_run_failed(run)
    return killed.version_id


def table_lag(e2e: E2E) -> tuple[str, ...]:
    return IcebergTables(TableSettings.from_env(e2e.settings)).lag(e2e.catalog, ASSET).days_behind


def decisions(e2e: E2E, request_id: str) -> dict[tuple[str, str], str]:
    return {(c["asset"], c["partition_key"]): c["decision"] for c in e2e.show(request_id)["cells"]}


def run_the_scenario(e2e: E2E, readers: ReaderProcess, hold: Path) -> dict[str, Any]:
    readers.wait_all_looked("the readers started (no table yet)")

    # 1. Thirty days, one of them spoilt: rejected, nothing serves it.
    month = e2e.create(
        "--assets", f"{RAW_ORDERS},{ASSET}", "--from", FIRST, "--to", LAST, "--max-active", "2",
        "--partitions-per-run", "10", "--reason", "readers during a request",
        "--conf", json.dumps({ASSET: {"defect_days": {REJECTED_DAY: "drop_rows"}}}),
    )["request_id"]
    e2e.wait(month, expect_exit=1, timeout=str(int(MONTH_TIMEOUT)))
    cells = decisions(e2e, month)
    assert cells.pop((ASSET, REJECTED_DAY)) == "rejected"
    assert set(cells.values()) == {"published"}, cells
    assert e2e.catalog.current(ASSET, REJECTED_DAY) is None
    readers.announce("the month's request closed")

    # 2. A re-run of five days at another rate, held with its versions VERIFYING: in flight, not published. The
    # run to be killed starts meanwhile (a process of its own, slow to import): nothing publishes before it but it.
    hold.touch()
    killing = start_the_run_to_kill(e2e)
    rerun = e2e.create("--assets", ASSET, "--from", RERUN[0], "--to", RERUN[1], "--reprocess", "completed",
                       "--partitions-per-run", "5", "--reason", "re-run at new rates",
                       "--conf", json.dumps({ASSET: {"usd_to_cny": 7.5, "eur_to_cny": 8.0}}))["request_id"]
    rerun_days = CALENDAR.keys_between(*RERUN)
    poll(lambda: any(v.state == "VERIFYING" and v.request_id == rerun
                     for day in rerun_days for v in e2e.catalog.versions_of(ASSET, day)),
         TIMEOUT, "a version of the re-run to be written and held VERIFYING")
    readers.announce("the re-run held in flight")

    # 3. A run killed between its publish commit and its table sync; only the daemon syncs while the re-run holds.
    killed = killed_after_its_publish(e2e, killing)
    lag_after_kill = table_lag(e2e)
    readers.announce("the kill")
    poll(lambda: not table_lag(e2e), TIMEOUT,
         lambda: f"the daemon to bring the table in line after the kill (behind: {table_lag(e2e)})")
    assert e2e.show(rerun)["status"] == "open", "the re-run closed while held"
    readers.announce("the daemon converged the table")

    # 4. The re-run released and finished; then one of its days rolled back while the readers read.
    hold.unlink()
    e2e.wait(rerun, timeout=str(int(TIMEOUT)))
    assert set(decisions(e2e, rerun).values()) == {"published"}
    readers.announce("the re-run closed")
    restored = e2e.catalog.versions_of(ASSET, ROLLED_BACK_DAY)[0]  # the month's version
    rolled = e2e.cli_json("rollback", ASSET, ROLLED_BACK_DAY, "--reason", "readers test: back to the month's",
                          "--by", "tester")
    assert e2e.catalog.current(ASSET, ROLLED_BACK_DAY).version_id == restored.version_id, rolled
    readers.announce("the rollback")
    return {"requests": {"month": month, "rerun": rerun}, "killed": killed, "lag_after_kill": lag_after_kill}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("readers")
    home = root / "dagster_home"
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        for var in TABLE_ENV:
            mp.delenv(var, raising=False)
        prepare_home(mp, home, seed_from=FIRST, seed_to=LAST)
        hold = root / HOLD_FILE
        mp.setenv(ENV_HOLD, f"{AFTER_VERIFYING}={hold}")  # inert until the test creates the file
        instance = dg.DagsterInstance.get()
        readers = None
        try:
            daemon, log = start_daemon(instance, home)
            e2e = E2E(home, instance, daemon, log)
            try:
                readers = ReaderProcess(root, e2e.settings)
                facts = run_the_scenario(e2e, readers, hold)
                readers.stop()
                readers.marks.append(("readers stopped", time.monotonic()))
                history = History.read(e2e.catalog, ASSET, CALENDAR.keys_between(FIRST, LAST), MEASURE)
                yield Scenario(e2e, readers, history, facts["requests"], facts["killed"], facts["lag_after_kill"],
                               pointers_now(e2e.catalog, ASSET), time.monotonic() - started)
            finally:
                hold.unlink(missing_ok=True)
                if readers is not None:
                    readers.stop()
                stop_process(daemon)
        finally:
            instance.dispose()
            db.dispose_all()


def judged(scenario: Scenario, reader: str) -> Judged:
    return judge(scenario.history, reader, scenario.readers.records(reader), by_files=reader == "pyiceberg")


def test_readers_of_the_published_table_see_exactly_the_published_versions(scenario):
    history, readers = scenario.history, scenario.readers
    results = {reader: judged(scenario, reader) for reader in ICEBERG_READERS}
    for reader, result in results.items():
        print(f"{reader}: {result.observations} observations, {result.states_seen} pointer states seen "
              f"(publish log seqs {sorted(set(result.positions))}), {result.rows_seen} rows read, "
              f"{len(result.errors)} errors, {len(result.violations)} violations")
    marks = readers.marks
    print("phases: " + ", ".join(f"{what} +{t - marks[0][1]:.1f} s" for what, t in marks[1:]))
    print(f"requests: {scenario.requests}")
    print(f"scenario: {scenario.seconds:.1f} s; publish log rows of {ASSET}: {len(history.seqs) - 1}; "
          f"versions: {len(history.versions)}; killed version {scenario.killed_version} "
          f"(table behind on {scenario.lag_after_kill or 'no day'} right after the kill)")
    for reader, result in results.items():
        assert not result.errors, f"{reader}: {result.errors[:5]}"
        assert not result.violations, f"{reader}: {len(result.violations)} violations:\n" + "\n".join(
            result.violations[:20])
        # Every announced phase was looked at: empty, the month, held, killed, converged, re-run, rolled back.
        assert {r["phase"] for r in readers.records(reader)} >= set(range(readers.phase + 1)), reader
        assert result.states_seen >= 5, (reader, sorted(set(result.positions)))

    # The rejected day was never served, the killed run's version is, the rolled-back day serves the month's.
    assert REJECTED_DAY in scenario.final_pointers  # published by the re-run
    assert scenario.final_pointers[KILLED_DAY] == scenario.killed_version
    rejected = [v for v in history.versions.values() if v.partition_key == REJECTED_DAY and v.state == "REJECTED"]
    assert len(rejected) == 1 and rejected[0].version_id not in history.served

    # The judge's last pointer state is the pointers table's (the publish log read right).
    assert history.states[-1] == scenario.final_pointers
    # At the end the table is the pointers, every day, and says so.
    final = sorted(readers.records("pyiceberg"), key=lambda r: r["n"])[-1]
    by_path = history.by_path()
    in_table = {by_path[p.removeprefix("file://")].partition_key: by_path[p.removeprefix("file://")].version_id
                for p in final["files"]}
    assert in_table == scenario.final_pointers
    shown = scenario.e2e.cli("tables")
    assert shown.exit_code == 0 and f"published.{ASSET}  in line" in shown.output, shown.output
    print(shown.output.strip())


def test_the_same_checker_flags_a_reader_of_the_warehouse_folder(scenario):
    result = judged(scenario, FOLDER_READER)
    kinds = count_kinds(result.violations)
    print(f"{FOLDER_READER}: {result.observations} observations, {len(result.errors)} failed reads, "
          f"{len(result.violations)} violations {dict(kinds)}")
    assert result.violations, "the checker passed a reader of every file under the asset's folder"
    history = scenario.history
    rejected = {v.version_id for v in history.versions.values() if v.state == "REJECTED"}
    superseded = {v.version_id for v in history.versions.values() if v.state in ("SUPERSEDED", "ROLLED_BACK")}
    assert any(REJECTED_DAY in v and any(r in v for r in rejected) for v in result.violations), \
        "the folder reader's rows of the rejected version went unnoticed"
    assert any(any(s in v for s in superseded) for v in result.violations), \
        "the folder reader's rows of superseded versions went unnoticed"
