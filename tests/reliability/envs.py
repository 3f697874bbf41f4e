"""A real environment: a temporary DAGSTER_HOME with a Dagster instance, a seeded source system, a warehouse
and a catalog (SQLite under the home, or a PostgreSQL database)."""

from __future__ import annotations

import json
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result

from backfill_assets.cli import cli
from backfill_assets.engine.model.settings import Settings
from backfill_assets.examples.orders.source import SourceSystem
from tests.homes import HasStores, in_process_instance
from tests.orders import CALENDAR as calendar
from tests.orders import MODULE

CODE_VERSION = "reliability-code"
SEED_FROM, SEED_TO = "2022-09-01", "2022-09-12"
ORDERS_PER_DAY = 60


@dataclass
class RelEnv(HasStores):
    home: Path
    variables: dict[str, str]
    instance: dg.DagsterInstance
    monkeypatch: pytest.MonkeyPatch
    backend: str = "sqlite"
    extra: dict = field(default_factory=dict)

    def activate(self) -> "RelEnv":
        for key in ("BACKFILL_CATALOG_URL", "DAGSTER_PG_URL"):
            self.monkeypatch.delenv(key, raising=False)
        for key, value in self.variables.items():
            self.monkeypatch.setenv(key, value)
        return self

    @property
    def settings(self) -> Settings:
        return Settings.from_env(self.variables)

    def cli(self, *args: str) -> Result:
        self.activate()
        # The code location is named: the fuzz harness runs the CLI from an empty folder (no pyproject.toml).
        return CliRunner().invoke(cli, ["-m", MODULE, *[str(a) for a in args]])

    def cli_json(self, *args: str, expect: tuple[int, ...] = (0,)):
        result = self.cli(*args, "--json")
        assert result.exit_code in expect, f"{args}: exit {result.exit_code}\n{result.output}\n{result.exception!r}"
        return json.loads(result.stdout)

    def close_open_requests(self) -> None:
        """Cancel what a failed earlier trial left open, so its claims cannot cascade into the next trial."""
        from backfill_assets.engine.model import request_model as M
        from backfill_assets.engine.store.ledger import Ledger

        ledger = Ledger(self.catalog)
        for record in ledger.list(statuses=M.ACTIVE_STATUSES):
            ledger.cancel(record.request_id)

    def table_rows(self) -> dict[str, list[tuple]]:
        """Every row of every catalog table: what a refused command must leave untouched."""
        from backfill_assets.engine.store.schema import metadata

        with self.catalog.engine.connect() as conn:
            return {
                t.name: sorted((tuple(map(str, r)) for r in conn.execute(sa.select(t)).all()))
                for t in metadata.sorted_tables
            }


@contextmanager
def make_env(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    catalog_url: str | None = None,
    seed: tuple[str, str] | None = (SEED_FROM, SEED_TO),
    instance_yaml: str | None = None,
    extra_variables: dict[str, str] | None = None,
) -> Iterator[RelEnv]:
    home.mkdir(parents=True, exist_ok=True)
    variables = {"DAGSTER_HOME": str(home), "BACKFILL_CODE_VERSION": CODE_VERSION, **(extra_variables or {})}
    if catalog_url:
        variables["BACKFILL_CATALOG_URL"] = catalog_url
    backend = "postgres" if catalog_url and catalog_url.startswith("postgresql") else "sqlite"
    if seed:
        SourceSystem(Settings.from_env(variables).source_url).seed(calendar, seed[0], seed[1], ORDERS_PER_DAY)
    if instance_yaml is not None:
        (home / "dagster.yaml").write_text(instance_yaml)
        for key, value in variables.items():
            monkeypatch.setenv(key, value)
        instance = dg.DagsterInstance.get()
        try:
            yield RelEnv(home, variables, instance, monkeypatch, backend).activate()
        finally:
            instance.dispose()
        return
    with in_process_instance(home) as instance:
        yield RelEnv(home, variables, instance, monkeypatch, backend).activate()


def pg_isready(timeout: float = 60.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if subprocess.run(["pg_isready", "-h", "127.0.0.1", "-p", "5432", "-q"]).returncode == 0:
            return True
        time.sleep(0.5)
    return False
