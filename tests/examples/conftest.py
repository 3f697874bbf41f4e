"""Both example code locations behind one interface, so the same engine tests run on each through the public API
(and nothing can quietly depend on the orders domain again)."""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets import graph_of
from backfill_assets.cli import cli
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.examples import orders, web_visits
from backfill_assets.integration.runs import local_runs
from tests.homes import HasStores, fresh_home, in_process_instance


@dataclass(frozen=True)
class Domain:
    name: str
    module: str
    days: tuple[str, ...]  # consecutive business days the tests work on (DST days for web_visits)
    defect_asset: str  # a data asset with an upstream and a row_count audit: drop_rows must fail it
    per_day: int
    # Changes the source data of the given days after the fact (late events), or None if the source never changes.
    change_source: Callable[[str, str], Any] | None = None

    @property
    def definitions(self):
        return importlib.import_module(self.module)

    @property
    def defs(self) -> dg.Definitions:
        return self.definitions.defs

    @property
    def graph(self) -> AssetGraph:
        return graph_of(self.defs)

    @property
    def source_asset(self) -> str:
        return self.graph.data_assets[0]


def _late_web_events(first: str, last: str) -> Any:
    return importlib.import_module(web_visits.MODULE).arrive_late(first, last, 7)


DOMAINS = [
    Domain("orders", orders.MODULE, ("2022-09-01", "2022-09-02", "2022-09-03"), "daily_revenue", 120),
    # 2023-03-12 is 23 hours long in New York, 2023-11-05 is 25 hours long.
    Domain("web_visits", web_visits.MODULE, ("2023-03-11", "2023-03-12", "2023-03-13"), "visits", 150,
           _late_web_events),
]


@dataclass
class DomainEnv(HasStores):
    domain: Domain
    home: Path
    settings: Settings
    instance: dg.DagsterInstance

    def run(self, days, assets=None, **options) -> list[local_runs.LocalRun]:
        return local_runs.run_partitions(self.instance, days, defs=self.domain.defs, assets=assets, **options)

    def cli(self, *args: str, expect_exit: int = 0) -> Any:
        result = CliRunner().invoke(cli, ["-m", self.domain.module, *args, "--json"], catch_exceptions=False)
        assert result.exit_code == expect_exit, result.output
        return json.loads(result.output) if expect_exit == 0 else result.output


@pytest.fixture(params=DOMAINS, ids=[d.name for d in DOMAINS])
def domain(request) -> Domain:
    return request.param


@pytest.fixture
def denv(domain, tmp_path, monkeypatch):
    home = tmp_path / "dagster_home"
    settings = fresh_home(home, monkeypatch)
    domain.definitions.seed(domain.days[0], domain.days[-1], domain.per_day)
    with in_process_instance(home) as instance:
        yield DomainEnv(domain, home, settings, instance)
    dispose_all()
