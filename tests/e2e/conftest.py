"""One real ``dagster-daemon`` on a temporary DAGSTER_HOME, shared by every end-to-end test.

The tests drive the product only through its CLI (click's CliRunner, in this process) and observe it through
the ledger, the catalog and Dagster's own run records. They share one daemon, so each test works on its own
partitions of September 2022 (claims are per asset+partition and are released when a request closes):

    09-01..09-07  max_active / backward order        09-18..09-19  side effects
    09-08..09-16  reprocess none / failed / completed 09-20         code-version block
    09-17         a held (queued) run                 09-21..09-23  overlap
    09-25..09-27  cancel (a submitted run)            09-29..09-30  adoption of a Dagster UI backfill
    10-01..10-03  cancel (a running run)

The instance's run queue is replaced so that only the driver enforces ``max_active`` (through its run slots: one
run per ``backfill/slot``, no per-request or per-lane tag limits), and a run tagged ``test/hold`` is never
dequeued (it stays QUEUED: an in-flight cell).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml
from click.testing import CliRunner, Result

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import PACKAGE_DIR, Settings
from backfill_assets.engine.store import db, schema
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.wap.faults import AFTER_VERIFYING, ENV_HOLD
from backfill_assets.examples.orders.source import SourceSystem
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from tests.orders import CALENDAR as calendar
from tests.orders import MODULE as CODE_LOCATION_MODULE
from tests.orders import run_partitions

from .services import (  # noqa: F401 - the e2e tests import the process helpers from here too
    DAGSTER_DAEMON,
    PRODUCT_DAEMON,
    Webserver,
    _wait_until_daemon_ready,
    dagster_env,
    free_port,
    poll,
    start_code_server,
    start_daemon,
    stop_process,
    tail,
)

CODE_VERSION = "e2e-code"
SEED_FROM, SEED_TO = "2022-09-01", "2022-10-16"
ORDERS_PER_DAY = 60
HOLD_FILE = "hold"
HOLD_TAG = "test/hold"
HELD = "1"  # a run whose hold tag has this value is never dequeued; setting it to anything else releases it
# A hang detector: `request wait` returns as soon as the request closes, so a green run never waits this long.
WAIT_TIMEOUT = "240"

REQUEST_TABLES = (schema.requests, schema.request_items, schema.claims)


FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
# A sensor tick that ran to its end without error (Dagster's TickStatus values): with or without run requests.
TICK_DONE = {"SUCCESS", "SKIPPED"}


# The run slots (the driver's queue-ahead and a UI backfill's max_active) and the UI backfill's order hold.
KEPT_LIMITS = (T.SLOT, T.QUEUE_HOLD)


def write_instance_yaml(home: Path, warm_launcher: bool = True, monitoring_seconds: int | None = None) -> None:
    """The project's dagster.yaml with the run concurrency replaced: only the driver (and its run slots, which
    the driver relies on for queue-ahead) limits a request; no lane or per-request backstop. Without
    ``warm_launcher`` the instance launches runs with Dagster's DefaultRunLauncher (through the code server).
    ``monitoring_seconds`` replaces run monitoring's pass interval and the delay before a dead run's pool slots
    are freed (5 s each), for tests about a run that dies."""
    config = yaml.safe_load((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    if not warm_launcher:
        config.pop("run_launcher")
    if monitoring_seconds is not None:
        config["run_monitoring"]["poll_interval_seconds"] = monitoring_seconds
        config["run_monitoring"]["free_slots_after_run_end_seconds"] = monitoring_seconds
    kept = [lim for lim in config["concurrency"]["runs"]["tag_concurrency_limits"] if lim["key"] in KEPT_LIMITS]
    config["concurrency"]["runs"] = {
        "max_concurrent_runs": 4,
        "tag_concurrency_limits": [{"key": HOLD_TAG, "value": HELD, "limit": 0}, *kept],
    }
    (home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


@dataclass
class E2E:
    home: Path
    instance: dg.DagsterInstance
    daemon: subprocess.Popen
    daemon_log: Path

    @contextmanager
    def holding_steps(self) -> Iterator[None]:
        """Inside, every run step of this daemon waits at ``after_verifying`` (its version VERIFYING); leaving
        releases them (the daemon's BACKFILL_HOLD names the file)."""
        hold = self.home.parent / HOLD_FILE
        hold.touch()
        try:
            yield
        finally:
            hold.unlink(missing_ok=True)

    # ---- the CLI ----------------------------------------------------------------------------------------------

    def cli(self, *args: str) -> Result:
        self.assert_daemon_alive()
        return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)

    def cli_json(self, *args: str, expect_exit: int = 0) -> Any:
        result = self.cli(*args, "--json")
        assert result.exit_code == expect_exit, f"{args}: exit {result.exit_code}\n{result.output}"
        return json.loads(result.stdout)

    def create(self, *args: str) -> dict:
        return self.cli_json("request", "create", "--requested-by", "e2e-tester", *args)

    def dry_run(self, *args: str) -> list[dict]:
        return self.cli_json("request", "create", "--requested-by", "e2e-tester", *args, "--dry-run")["cells"]

    def show(self, request_id: str) -> dict:
        return self.cli_json("request", "show", request_id)

    def wait(self, request_id: str, expect_exit: int = 0, timeout: str = WAIT_TIMEOUT) -> dict:
        result = self.cli("request", "wait", request_id, "--timeout", timeout, "--json")
        out = json.loads(result.stdout)
        assert result.exit_code == expect_exit, (
            f"wait {request_id}: exit {result.exit_code}, expected {expect_exit}: {out}\n"
            f"{json.dumps(self.show(request_id)['cells'], indent=1, default=str)}"
        )
        return out

    # ---- observing --------------------------------------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return Settings.from_env()

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.catalog_url)

    def run_records(self, request_id: str) -> list[dg.RunRecord]:
        records = self.instance.get_run_records(dg.RunsFilter(tags={T.REQUEST_ID: request_id}))
        return sorted(records, key=lambda r: (r.create_timestamp, r.storage_id))

    def run_cells(self, request_id: str) -> set[tuple[str, str]]:
        """(asset, partition) of every cell a Dagster run of the request writes."""
        cells = set()
        for record in self.run_records(request_id):
            run = record.dagster_run
            assert run.asset_selection, f"run {run.run_id} of {request_id} has no asset selection"
            for key in run.asset_selection:
                cells.add((key.to_user_string(), run.tags[T.DAGSTER_PARTITION]))
        return cells

    def ledger_rows(self) -> dict[str, list[tuple]]:
        """Every row of the request tables: what a refused command or a dry run must leave untouched."""
        with self.catalog.engine.connect() as conn:
            return {
                t.name: sorted(tuple(r) for r in conn.execute(sa.select(t)).all()) for t in REQUEST_TABLES
            }

    def claims_of(self, request_id: str) -> set[tuple[str, str]]:
        with self.catalog.engine.connect() as conn:
            rows = conn.execute(
                sa.select(schema.claims.c.asset, schema.claims.c.partition_key).where(
                    schema.claims.c.request_id == request_id
                )
            ).all()
        return {(r.asset, r.partition_key) for r in rows}

    def ledger_request_ids(self) -> dict[str, set[str]]:
        """The request ids that have rows in each request table."""
        with self.catalog.engine.connect() as conn:
            return {
                t.name: set(conn.execute(sa.select(t.c.request_id).distinct()).scalars()) for t in REQUEST_TABLES
            }

    # ---- preparing state fast ---------------------------------------------------------------------------------

    def prepare(
        self,
        days: Iterable[str],
        assets: list[str],
        run_config_for: Mapping[str, Mapping[str, Any]] | None = None,
        expect_success: bool = True,
    ) -> None:
        """In-process runs on the shared instance (~0.5 s each): the upstream state a test starts from."""
        for run in run_partitions(self.instance, list(days), assets=assets, run_config_for=run_config_for):
            assert run.success == expect_success, f"preparing {assets} {run.partition_key}: {run.failure}"

    # ---- the daemon -------------------------------------------------------------------------------------------

    def assert_daemon_alive(self) -> None:
        if self.daemon.poll() is not None:
            pytest.fail(
                f"dagster-daemon exited with {self.daemon.returncode}; log tail:\n{tail(self.daemon_log)}",
                pytrace=False,
            )

    def log_tail(self) -> str:
        return tail(self.daemon_log)

    def driver_ticks_since(self, since: float) -> int:
        """The driver sensor's ticks that began after ``since`` (a wall-clock timestamp) and finished without
        error: each decided every open request on what was committed before it began, and created the runs it
        asked for before it finished."""
        return sum(
            1
            for state in self.instance.all_instigator_state()
            if state.instigator_name == DRIVER_SENSOR
            for tick in self.instance.get_ticks(state.instigator_origin_id, state.selector_id, after=since)
            if tick.status.value in TICK_DONE
        )

    def wait_driver_ticks(self, count: int, timeout: float = 180.0) -> None:
        """Until the daemon's driver has ticked ``count`` times from now: what it would launch, it has launched.
        Waiting for nothing to happen is waiting for its ticks, never for a fixed time."""
        self.assert_daemon_alive()
        since = time.time()
        poll(lambda: self.driver_ticks_since(since) >= count, timeout,
             lambda: f"{count} driver tick(s) after {since} (got {self.driver_ticks_since(since)})")


def launch_held_run(e2e: E2E, day: str, hold: tuple[str, str] = (HOLD_TAG, HELD)) -> dg.DagsterRun:
    """A real queued run of the whole asset job for ``day`` that the run queue never dequeues: its ``hold`` tag
    (key, value) has a limit of 0 in the home's run queue (test/hold here; the shipped file's own
    ``backfill/queue_hold=held`` on a home that has no test limit)."""
    launched = subprocess.run(
        [dagster_bin("dagster"), "job", "launch", "-m", CODE_LOCATION_MODULE, "-j", "__ASSET_JOB",
         "--tags", json.dumps({T.DAGSTER_PARTITION: day, hold[0]: hold[1]})],
        env=dagster_env(), capture_output=True, text=True, timeout=120,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr
    [run] = e2e.instance.get_runs(dg.RunsFilter(tags={hold[0]: hold[1], T.DAGSTER_PARTITION: day}))
    assert run.status == dg.DagsterRunStatus.QUEUED
    return run


def report_outputs(e2e: E2E, request_id: str, timeout: float, count: int) -> list[dict]:
    """The output metadata of the request's finished ``backfill_report`` runs, oldest first, once ``count`` exist."""
    from backfill_assets.integration.request_jobs import REPORT_JOB, REPORT_OP

    def finished() -> list[dg.DagsterRun]:
        runs = e2e.instance.get_runs(dg.RunsFilter(job_name=REPORT_JOB, tags={T.REPORT_OF: request_id}))
        done = [r for r in runs if r.status in FINISHED]
        return done if len(done) >= count else []

    outputs = []
    for run in reversed(poll(finished, timeout, f"{count} report run(s) of {request_id}")):
        assert run.status == dg.DagsterRunStatus.SUCCESS, run.run_id
        [event] = [
            e for e in e2e.instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_OUTPUT)
            if e.dagster_event.step_key == REPORT_OP
        ]
        outputs.append({k: v.value for k, v in event.dagster_event.step_output_data.metadata.items()})
    return outputs


def prepare_home(
    mp: pytest.MonkeyPatch, home: Path, seed_from: str = SEED_FROM, seed_to: str = SEED_TO,
    warm_launcher: bool = True, monitoring_seconds: int | None = None,
) -> None:
    """Point this process (and the subprocesses it starts) at a fresh DAGSTER_HOME with the test instance yaml,
    the test code version and the default storage under the home; seed the source system for the given days."""
    home.mkdir(parents=True, exist_ok=True)
    write_instance_yaml(home, warm_launcher, monitoring_seconds)
    mp.setenv("DAGSTER_HOME", str(home))
    mp.setenv("BACKFILL_CODE_VERSION", CODE_VERSION)
    for var in ("BACKFILL_WAREHOUSE", "BACKFILL_CATALOG_URL", "BACKFILL_SOURCE_URL", "BACKFILL_SINK_PATH"):
        mp.delenv(var, raising=False)
    SourceSystem(Settings.from_env().source_url).seed(calendar, seed_from, seed_to, ORDERS_PER_DAY)


@pytest.fixture(scope="package")
def e2e(tmp_path_factory) -> Iterable[E2E]:
    home = tmp_path_factory.mktemp("e2e") / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        prepare_home(mp, home)
        # Inert until a test holds (E2E.holding_steps): the daemon, its warm worker and their runs inherit it.
        mp.setenv(ENV_HOLD, f"{AFTER_VERIFYING}={home.parent / HOLD_FILE}")
        instance = dg.DagsterInstance.get()
        try:
            proc, log_path = start_daemon(instance, home)
            try:
                yield E2E(home, instance, proc, log_path)
            finally:
                stop_process(proc)
        finally:
            instance.dispose()
            db.dispose_all()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failure, attach the daemon log's tail to the report."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and "e2e" in getattr(item, "fixturenames", ()):
        env = item.funcargs.get("e2e") if hasattr(item, "funcargs") else None
        if isinstance(env, E2E):
            report.sections.append(("dagster-daemon log (tail)", env.log_tail()))


def release_held_run(e2e: E2E, run_id: str) -> None:
    """Set the run's hold tag to another value, until it sticks: Dagster's add_run_tags rewrites the run's whole tag
    set, so a release written while the run coordinator (or adoption) wrote its own tags was lost."""

    def released() -> bool:
        if e2e.instance.get_run_by_id(run_id).tags.get(HOLD_TAG) == HELD:
            e2e.instance.add_run_tags(run_id, {HOLD_TAG: "released"})
            return False
        return True

    poll(released, 30, f"the release of run {run_id}", interval=0.5)


def home_under_dagster_daemon(tmp_path_factory: pytest.TempPathFactory, name: str, stock_classes: bool,
                              seeded: tuple[str, str]) -> Iterator[E2E]:
    """A home under Dagster's own ``dagster-daemon run``: Dagster's own classes only (``stock_classes``), or the
    shipped dagster.yaml; its source seeded over the ``seeded`` days. For a module-scoped fixture to yield from."""
    from tests.homes import write_stock_instance_yaml

    home = tmp_path_factory.mktemp(name) / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        prepare_home(mp, home, seed_from=seeded[0], seed_to=seeded[1])
        if stock_classes:
            write_stock_instance_yaml(home)  # replaces the test instance yaml prepare_home wrote
        else:
            shutil.copy(PACKAGE_DIR / "instance" / "dagster.yaml", home / "dagster.yaml")
        # Inert until a test holds (E2E.holding_steps): the daemon, its code servers and their runs inherit it.
        mp.setenv(ENV_HOLD, f"{AFTER_VERIFYING}={home.parent / HOLD_FILE}")
        instance = dg.DagsterInstance.get()
        code_server, workspace = start_code_server(home)
        try:
            daemon, log = start_daemon(instance, home, "-w", str(workspace), command=DAGSTER_DAEMON)
            try:
                yield E2E(home, instance, daemon, log)
            finally:
                stop_process(daemon)
        finally:
            stop_process(code_server)
            instance.dispose()
            db.dispose_all()
