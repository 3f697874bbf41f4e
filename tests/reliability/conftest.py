"""Fixtures of the reliability suite: trial counting, real environments (SQLite or PostgreSQL catalog) and a
forkserver for the child processes that get SIGKILLed or race each other.

``BACKFILL_RELIABILITY=slow`` runs 30 trials per class instead of 3; ``BACKFILL_RELIABILITY_JSON=PATH`` writes the
per-class counts at the end of the session (``make reliability`` renders them into docs/RELIABILITY.md).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from backfill_assets.engine.store import db
from tests.forkserver import forkserver_context, stop_forkserver

from . import mode
from .envs import CODE_VERSION, RelEnv, make_env
from .recorder import RESULTS, SESSION, TrialClass, write_report

PG_RESTART_MARK = "pg_restart"


def pytest_configure(config):
    config.addinivalue_line("markers", f"{PG_RESTART_MARK}: restarts the PostgreSQL server; always runs last")


def pytest_collection_modifyitems(session, config, items):
    # Restarting the server breaks every open connection of the session: nothing may run after it.
    last = [item for item in items if item.get_closest_marker(PG_RESTART_MARK)]
    if last:
        items[:] = [item for item in items if item not in last] + last


def pytest_sessionstart(session):
    SESSION["started"] = time.time()


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get(mode.ENV_REPORT)
    if target and RESULTS:  # under xdist only the worker that ran the suite has counts to write
        write_report(Path(target), int(exitstatus))


@pytest.fixture
def trials():
    """``with trials("crash.after_data_file") as klass: with klass.trial(i): ...`` — counts, then fails once."""

    @contextmanager
    def open_class(class_id: str) -> Iterator[TrialClass]:
        klass = TrialClass(class_id)
        yield klass
        klass.finish()

    return open_class


@pytest.fixture(scope="session")
def forkserver():
    """A multiprocessing context whose children fork from a server that has already imported the code location."""
    yield forkserver_context()
    stop_forkserver()


class EnvBuilder:
    """Builds real environments under ``base``; ``env.activate()`` points this process at one of them (the CLI
    and Dagster read the environment). ``backend="postgres"`` puts the catalog in a fresh database."""

    def __init__(self, base: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
        self.base = base
        self.monkeypatch = monkeypatch
        self.request = request
        self.opened: list = []
        self.databases: list[str] = []
        monkeypatch.setenv("BACKFILL_CODE_VERSION", CODE_VERSION)
        for var in ("BACKFILL_WAREHOUSE", "BACKFILL_CATALOG_URL", "BACKFILL_SOURCE_URL", "BACKFILL_SINK_PATH",
                    "BACKFILL_FAULT", "DAGSTER_PG_URL"):
            monkeypatch.delenv(var, raising=False)

    def pg_url(self) -> str:
        server = self.request.getfixturevalue("pg_server")
        self.databases.append(server.create_database())
        return server.url_for(self.databases[-1])

    def __call__(self, name: str, backend: str = "sqlite", **kwargs) -> RelEnv:
        catalog_url = self.pg_url() if backend == "postgres" else None
        cm = make_env(self.base / name, self.monkeypatch, catalog_url=catalog_url, **kwargs)
        built = cm.__enter__()
        self.opened.append(cm)
        return built

    def close(self) -> None:
        for cm in reversed(self.opened):
            cm.__exit__(None, None, None)
        db.dispose_all()
        if self.databases:
            server = self.request.getfixturevalue("pg_server")
            for name in self.databases:
                server.drop_database(name)


@pytest.fixture
def envs(tmp_path, monkeypatch, request):
    builder = EnvBuilder(tmp_path, monkeypatch, request)
    yield builder
    builder.close()


@pytest.fixture(scope="module")
def module_envs(tmp_path_factory, request):
    """Environments shared by the tests of one module (each test still starts from what it checks)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        builder = EnvBuilder(tmp_path_factory.mktemp("envs"), monkeypatch, request)
        yield builder
        builder.close()


@pytest.fixture
def env(envs) -> RelEnv:
    """One environment with the embedded defaults (SQLite catalog and Dagster storage)."""
    return envs("home")
