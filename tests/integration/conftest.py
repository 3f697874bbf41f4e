"""A real Dagster instance on a temporary DAGSTER_HOME, with a seeded source system."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.examples.orders.source import SourceSystem
from tests.homes import HasStores, fresh_home
from tests.orders import CALENDAR as calendar

SEED_FROM, SEED_TO = "2022-09-01", "2022-09-05"
ORDERS_PER_DAY = 120


@dataclass
class Env(HasStores):
    home: Path
    settings: Settings
    instance: dg.DagsterInstance


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "dagster_home"
    settings = fresh_home(home, monkeypatch)
    SourceSystem(settings.source_url).seed(calendar, SEED_FROM, SEED_TO, ORDERS_PER_DAY)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        yield Env(home, settings, instance)
    dispose_all()
