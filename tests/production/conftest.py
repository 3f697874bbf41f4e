"""A real daemon on the project's own instance config: on PostgreSQL storage ``backfill-assets-daemon``, on SQLite
Dagster's own ``dagster-daemon`` (the timers every wake-up falls back to).

Unlike tests/e2e (which lifts the run limits so only the driver paces a request), these tests run with the
limits a team runs with: deploy's dagster.yaml on PostgreSQL, the top-level dagster.yaml on SQLite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model.settings import PACKAGE_DIR, Settings
from backfill_assets.engine.store import db
from backfill_assets.engine.wap.faults import AFTER_DATA_FILE, ENV_HOLD
from backfill_assets.examples.orders.source import SourceSystem
from tests.e2e.conftest import _wait_until_daemon_ready, start_code_server, stop_process, tail
from tests.orders import CALENDAR as calendar
from tests.orders import MODULE as CODE_LOCATION_MODULE

CODE_VERSION = "production-test-code"
SEED_FROM, SEED_TO = "2022-09-01", "2022-09-28"
ORDERS_PER_DAY = 40


@dataclass
class Prod:
    storage: str
    home: Path
    instance: dg.DagsterInstance
    daemon_log: Path
    # While this file exists, every run of the package's daemon waits after writing its data file
    # (``BACKFILL_HOLD``): a test keeps runs in flight, and the queue behind them, for as long as it needs.
    hold: Path

    def cli_json(self, *args: str, expect_exit: int = 0):
        result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
        assert result.exit_code == expect_exit, result.output
        return json.loads(result.stdout)

    def create(self, *args: str) -> str:
        return self.cli_json("request", "create", "--requested-by", "prod-test", *args)["request_id"]

    def wait(self, request_id: str, expect_exit: int = 0) -> dict:
        result = CliRunner().invoke(cli, ["request", "wait", request_id, "--timeout", "240", "--json"])
        assert result.exit_code == expect_exit, f"{result.output}\n{tail(self.daemon_log)}"
        return json.loads(result.stdout)


@pytest.fixture(scope="package", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def prod(request, tmp_path_factory) -> Iterable[Prod]:
    home = tmp_path_factory.mktemp(f"prod-{request.param}") / "dagster_home"
    home.mkdir()
    created: list[str] = []
    server = None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DAGSTER_HOME", str(home))
        mp.setenv("BACKFILL_CODE_VERSION", CODE_VERSION)
        for var in ("BACKFILL_WAREHOUSE", "BACKFILL_CATALOG_URL", "BACKFILL_SOURCE_URL", "BACKFILL_SINK_PATH"):
            mp.delenv(var, raising=False)
        if request.param == "postgres":
            server = request.getfixturevalue("pg_server")  # skips (or fails under CI=true) when PG is down
            created += [server.create_database(), server.create_database()]
            mp.setenv("DAGSTER_PG_URL", server.url_for(created[0]))
            mp.setenv("BACKFILL_CATALOG_URL", server.url_for(created[1]))
            shutil.copyfile(PACKAGE_DIR.parent / "deploy" / "postgres" / "dagster.yaml", home / "dagster.yaml")
        else:
            shutil.copyfile(PACKAGE_DIR.parent / "dagster.yaml", home / "dagster.yaml")
        SourceSystem(Settings.from_env().source_url).seed(calendar, SEED_FROM, SEED_TO, ORDERS_PER_DAY)
        instance = dg.DagsterInstance.get()
        log_path, hold = home / "daemon.log", home.parent / "hold-runs"
        env = {**os.environ, ENV_HOLD: f"{AFTER_DATA_FILE}={hold}"}
        # PostgreSQL storage under the product's daemon (its own code server); SQLite under Dagster's own, whose
        # timers (sensors every 5 s, backfills every 30 s) are the backstop every promise must also hold on, with
        # its code served as a deployment serves it (Dagster's daemon replaces a code server it starts every minute).
        code_server, where = None, ["-m", CODE_LOCATION_MODULE]
        if request.param == "sqlite":
            code_server, workspace = start_code_server(home, env)
            where = ["-w", str(workspace)]
        with log_path.open("ab") as log:
            command = "backfill-assets-daemon" if request.param == "postgres" else "dagster-daemon"
            proc = subprocess.Popen(
                [dagster_bin(command), "run", *where],
                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(home), start_new_session=True,
            )
        try:
            _wait_until_daemon_ready(instance, proc, log_path)
            yield Prod(request.param, home, instance, log_path, hold)
        finally:
            stop_process(proc)
            if code_server is not None:
                stop_process(code_server)
            instance.dispose()
            db.dispose_all()
            for name in created:
                server.drop_database(name)
