"""Engines for the catalog: the same SQLAlchemy Core code on SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.store import publish_pg, schema_version

T = TypeVar("T")

READ_ONLY = "backfill_read_only"

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    """One engine per URL per process; on first use its schema version is checked (an empty database is created at
    head, a catalog at another version refused: ``CatalogSchemaMismatch``)."""
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = create_engine(url)
            try:
                _open_checked(engine, url)
            except BaseException:
                engine.dispose()  # a refused catalog keeps no pooled connection of this process
                raise
            _engines[url] = engine
        return engine


def reader_for(url: str) -> Engine:
    """The same engine (same pool) for read-only work: on SQLite its transactions do not take the write lock."""
    return engine_for(url).execution_options(**{READ_ONLY: True})


def dispose_all() -> None:
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


def sql_engine(url: str, read_only: bool = False) -> Engine:
    """A SQLAlchemy engine set up as the catalog's is (SQLite: WAL, a 60 s busy timeout, BEGIN IMMEDIATE for
    writers; PostgreSQL: pre-ping), for a code location's own sources. ``read_only``: its transactions never
    take SQLite's write lock, so readers in concurrent steps do not queue behind each other."""
    engine = create_engine(url)
    return engine.execution_options(**{READ_ONLY: True}) if read_only else engine


def create_engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError for malformed URLs
        raise InvalidInput(f"catalog URL {url!r} is not a database URL") from exc
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": 60})
        _make_sqlite_transactional(engine)
        return engine
    if parsed.get_backend_name() == "postgresql":
        # pre_ping replaces connections a server restart has killed instead of failing the next statement.
        return sa.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=4)
    raise InvalidInput(f"catalog URL {url!r}: only sqlite:// and postgresql:// are supported")


def _make_sqlite_transactional(engine: Engine) -> None:
    # pysqlite's implicit transactions start lazily and upgrade read locks to write locks, which deadlocks
    # concurrent publishers. Take the write lock at BEGIN instead (BEGIN IMMEDIATE), and use WAL so readers
    # are never blocked by a publish.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):  # noqa: ANN001
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=60000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):  # noqa: ANN001
        # Readers (reader_for) take no write lock: in WAL mode they see a consistent snapshot without one.
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")


def _open_checked(engine: Engine, url: str) -> None:
    """A catalog at this code's schema version opens (one query); an empty database becomes one; any other is
    refused with what to do (``schema_version.mismatch``), nothing changed."""
    try:
        with engine.execution_options(**{READ_ONLY: True}).connect() as conn:
            revision, has_function = _head_probe(conn)
    except (sa.exc.OperationalError, sa.exc.ProgrammingError):
        # No version table (or the probe could not run): decide under the schema lock, where it cannot change.
        revision = retry_transient(lambda: _create_if_empty(engine, url), attempts=5)
        has_function = engine.dialect.name != "postgresql"
    where = schema_version.standing(revision, has_tables=True)
    if where != schema_version.AT_HEAD:
        raise schema_version.mismatch(url, revision, where)
    if not has_function:
        # The function's name digests its body: a release that changed it needs it created, at the same schema.
        with engine.begin() as conn:
            ensure_publish_function(conn)


def _head_probe(conn: sa.Connection) -> tuple[str | None, bool]:
    """The stored revision and, on PostgreSQL, whether this code's publish function exists: one round trip."""
    if conn.dialect.name != "postgresql":
        return schema_version.read_revision(conn), True
    rows = conn.execute(
        sa.text(f"SELECT version_num, to_regprocedure(:sig) IS NOT NULL FROM {schema_version.VERSION_TABLE}"),
        {"sig": publish_pg.REGPROCEDURE},
    ).all()
    return "+".join(sorted(r[0] for r in rows)) or None, bool(rows) and all(r[1] for r in rows)


def _create_if_empty(engine: Engine, url: str) -> str | None:
    """Several processes may open a fresh catalog at once: under the schema lock, the first creates it at head and
    the others find its version. A catalog with tables but no version is left as it is (the caller refuses it)."""
    with engine.begin() as conn:
        schema_version.lock_schema(conn)
        revision, has_tables = schema_version.inspect_revision(conn)
        if revision is not None or has_tables:
            return revision
        schema_version.create_at_head(conn)
        if engine.dialect.name == "postgresql":
            ensure_publish_function(conn)
        return schema_version.HEAD


def ensure_publish_function(conn: sa.Connection) -> None:
    """PostgreSQL publishes through one server-side function (``publish_pg``); SQLite keeps its statements."""
    # Serialize creators across processes: CREATE FUNCTION racing itself fails on the catalog's unique index.
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": publish_pg.NAME})
    exists = conn.execute(sa.text("SELECT to_regprocedure(:sig) IS NOT NULL"), {"sig": publish_pg.REGPROCEDURE})
    if not exists.scalar_one():
        conn.exec_driver_sql(publish_pg.DDL)


def retry_transient(fn: Callable[[], T], attempts: int = 5, delay: float = 0.2) -> T:
    """Retry on errors a concurrent creator or a restarting server causes; anything else propagates."""
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except (sa.exc.OperationalError, sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.InterfaceError):
            if attempt == attempts:
                raise
            time.sleep(delay * attempt)
    raise AssertionError("unreachable")
