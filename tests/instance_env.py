"""A real Dagster instance on a temporary DAGSTER_HOME, with a seeded source system: the ``env`` and
``refusal_env`` fixtures of the folders that test through a real instance (tests/integration, tests/service,
tests/cli, tests/launchpad, tests/doors). Each folder's conftest.py imports the two fixtures from here, so every
folder sees the same definition; a test that builds its own environment calls ``environment``."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import dagster as dg
import pytest

from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.examples.orders.source import SourceSystem
from tests.homes import HasStores, fresh_home, in_process_instance
from tests.orders import CALENDAR as calendar

SEED_FROM, SEED_TO = "2022-09-01", "2022-09-05"
ORDERS_PER_DAY = 120


@dataclass
class Env(HasStores):
    home: Path
    settings: Settings
    instance: dg.DagsterInstance


@contextmanager
def environment(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Env]:
    settings = fresh_home(home, monkeypatch)
    SourceSystem(settings.source_url).seed(calendar, SEED_FROM, SEED_TO, ORDERS_PER_DAY)
    with in_process_instance(home) as instance:
        yield Env(home, settings, instance)
    dispose_all()


@pytest.fixture
def env(tmp_path, monkeypatch):
    with environment(tmp_path / "dagster_home", monkeypatch) as made:
        yield made


@pytest.fixture(scope="module")
def refusal_env(tmp_path_factory):
    """One environment for a module's refusal tests. Each asserts that its bad input changed nothing, so they can
    share it (a refusal that did write would fail its own test); a fresh instance per case cost most of their time."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        with environment(tmp_path_factory.mktemp("refusals") / "dagster_home", monkeypatch) as made:
            yield made
