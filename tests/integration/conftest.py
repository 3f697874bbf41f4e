"""A real Dagster instance on a temporary DAGSTER_HOME, with a seeded source system."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.examples.orders.source import SourceSystem
from tests.orders import CALENDAR as calendar

SEED_FROM, SEED_TO = "2022-09-01", "2022-09-05"
ORDERS_PER_DAY = 120


@dataclass
class Env:
    home: Path
    settings: Settings
    instance: dg.DagsterInstance

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.catalog_url)

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.settings.warehouse_root)


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "dagster_home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    for var in ("BACKFILL_WAREHOUSE", "BACKFILL_CATALOG_URL", "BACKFILL_SOURCE_URL", "BACKFILL_SINK_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BACKFILL_CODE_VERSION", "test-code-1")
    settings = Settings.from_env()
    SourceSystem(settings.source_url).seed(calendar, SEED_FROM, SEED_TO, ORDERS_PER_DAY)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        yield Env(home, settings, instance)
    dispose_all()
