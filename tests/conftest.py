"""Shared fixtures.

``catalog_url`` runs a catalog test once on SQLite (a file under ``tmp_path``) and once on PostgreSQL
(``BACKFILL_TEST_PG_URL``, default ``postgresql://postgres@127.0.0.1:5432/test``). Each PostgreSQL test gets a
fresh database named ``backfill_test_<8 hex>_<n>``: the 8 hex digits identify this test session, every database
is dropped when its test ends and any leftover of the session is dropped at session end. When the server is
unreachable the PostgreSQL cases are skipped, except under ``CI=true`` where they fail.
"""

from __future__ import annotations

import gc
import itertools
import os
import shutil
import signal
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.pool import NullPool

from backfill_assets.engine.store import db
from backfill_assets.process_gc import collect_less_often, freeze_long_lived_objects
from tests.s3 import set_environment, start_s3_server

PG_URL_ENV = "BACKFILL_TEST_PG_URL"
# A RAM filesystem for the tests' files when the machine has one (Linux's /dev/shm) with this much free.
RAM_TMPDIR, RAM_TMPDIR_MIN_FREE = "/dev/shm", 2 * 1024**3
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"

# No example database: hypothesis would otherwise write .hypothesis/ into the repository.
hypothesis_settings.register_profile("backfill", database=None, deadline=None)
hypothesis_settings.load_profile("backfill")


def _take_ctrl_c_again() -> None:
    """A suite started as a background job of a script (``make test &``, ``nohup``) inherits SIGINT ignored.
    Dagster maps SIGTERM to whatever SIGINT does each time it restores its handlers after an in-process run
    (``dagster._utils.interrupts.setup_interrupt_handlers``), so SIGTERM then became ignored too, in this process
    and in every ``tail -F`` its compute-log manager starts next: each captured step waited 30 s for a tail that
    would not stop, and the tails outlived the suite (two browser tests timed out at 300 s that way). The tests
    run as they would from a terminal: Ctrl-C and SIGTERM back to Python's defaults."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def pytest_configure(config):
    _take_ctrl_c_again()
    _use_ram_tmpdir()
    collect_less_often()  # while the test modules, Dagster and the examples are imported


def pytest_collection_finish(session):
    """Once every test module is imported (in each xdist worker too), what they built is frozen out of the
    collector's reach and its default pace comes back, as the product's own processes do after their imports
    (backfill_assets/process_gc.py): full collections no longer walk Dagster's and the tests' modules again. The
    engine and Launchpad tests, one process: 5.4 of 35.4 CPU-s in the collector, 3.8 with the freeze. The garbage
    there is collected first, so none of it (a connection in a transaction) is kept for the whole run."""
    gc.collect()
    freeze_long_lived_objects()


def _use_ram_tmpdir() -> None:
    """Every test's files (Dagster homes with their SQLite storage, catalogs, warehouses, sockets) go under a RAM
    filesystem when there is one and TMPDIR does not say otherwise: SQLite commits there do not wait for the disk,
    which takes a third off an in-process run and speeds every daemon and code server of the suite. Nothing else
    changes: the same files, the same SQLite. Set before xdist starts its workers, so they and every process
    the tests start inherit it."""
    if os.environ.get("TMPDIR") or not os.path.isdir(RAM_TMPDIR) or not os.access(RAM_TMPDIR, os.W_OK):
        return
    if shutil.disk_usage(RAM_TMPDIR).free < RAM_TMPDIR_MIN_FREE:
        return
    os.environ["TMPDIR"] = RAM_TMPDIR
    tempfile.tempdir = RAM_TMPDIR


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() == "true"


@dataclass
class PgServer:
    """The admin connection to the test server and the databases this session created on it."""

    admin_url: str
    engine: Engine
    prefix: str
    _counter: itertools.count = field(default_factory=lambda: itertools.count(1))

    def url_for(self, name: str) -> str:
        return make_url(self.admin_url).set(database=name).render_as_string(hide_password=False)

    def create_database(self) -> str:
        name = f"{self.prefix}_{next(self._counter)}"
        with self.engine.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        return name

    def drop_database(self, name: str) -> None:
        with self.engine.connect() as conn:
            conn.execute(
                sa.text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            )
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}"')

    def leftover_databases(self) -> list[str]:
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    sa.text("SELECT datname FROM pg_database WHERE datname LIKE :pattern"),
                    {"pattern": f"{self.prefix}%"},
                ).scalars()
            )


@pytest.fixture(scope="session")
def pg_server():
    admin_url = os.environ.get(PG_URL_ENV) or DEFAULT_PG_URL
    engine = sa.create_engine(
        admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool, connect_args={"connect_timeout": 3}
    )
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.SQLAlchemyError as exc:
        engine.dispose()
        reason = f"PostgreSQL at {make_url(admin_url)!r} is unreachable: {str(exc).splitlines()[0]}"
        if _in_ci():
            pytest.fail(f"CI=true and {reason}", pytrace=False)
        pytest.skip(reason)
    server = PgServer(admin_url, engine, f"backfill_test_{uuid.uuid4().hex[:8]}")
    yield server
    db.dispose_all()
    for name in server.leftover_databases():
        server.drop_database(name)
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request, tmp_path):
    """A URL of an empty catalog database, on each supported backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/catalog.db"
        db.dispose_all()
        return
    with fresh_pg_database(request.getfixturevalue("pg_server")) as url:
        yield url


@contextmanager
def fresh_pg_database(server: PgServer):
    """The URL of a new empty database on the test server, dropped (engines disposed first) afterwards."""
    name = server.create_database()
    try:
        yield server.url_for(name)
    finally:
        db.dispose_all()
        server.drop_database(name)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server on loopback (``moto_server``, its own process) for this session, and the standard AWS
    variables pointing every S3 client of the session at it."""
    server = start_s3_server(tmp_path_factory.mktemp("s3"))
    monkeypatch = pytest.MonkeyPatch()
    set_environment(monkeypatch, server)
    try:
        yield server
    finally:
        monkeypatch.undo()
        server.stop()


# Tests sharing a daemon or a module-scoped fixture stay on one xdist worker; everything else is spread freely.
# A worker builds its own copy of a package-scoped fixture (its own DAGSTER_HOME and daemon), so the e2e files,
# the production storages and the reliability modules can run side by side: most of their wall time is waiting
# on runs and 5 s sensor ticks.
DAEMON_SUITES = ("e2e", "production", "reliability", "bench", "distributed")
# Tests that restart the PostgreSQL server would break every other test using it: they run alone, last.
SERVER_RESTART_TESTS = ("test_postgres_restarted_mid_request_finishes_every_cell_once",)


def _xdist_group(item) -> str | None:
    suite = item.path.parent.name
    if suite not in DAEMON_SUITES:
        return None
    if suite == "production":  # one package fixture per storage
        storage = getattr(getattr(item, "callspec", None), "params", {}).get("prod")
        return f"production-{storage}" if storage else suite
    if suite in ("e2e", "reliability"):  # per file: e2e days are disjoint, reliability fixtures are per module
        return f"{suite}/{item.path.stem}"
    return suite


def pytest_collection_modifyitems(config, items):
    for item in items:
        group = _xdist_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
        if getattr(item, "originalname", item.name) in SERVER_RESTART_TESTS:
            item.add_marker(pytest.mark.server_restart)
