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
from backfill_assets.engine.store import publish_pg
from backfill_assets.engine.store.schema import log_head, metadata
from backfill_assets.engine.store.upgrades import FILL_ADDED_COLUMN

T = TypeVar("T")

READ_ONLY = "backfill_read_only"

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def engine_for(url: str) -> Engine:
    """One engine per URL per process, schema created on first use."""
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            engine = create_engine(url)
            _ensure_schema(engine)
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


def _ensure_schema(engine: Engine) -> None:
    def create() -> None:
        metadata.create_all(engine, checkfirst=True)
        _add_new_columns(engine)
        # create_all makes the indexes of the tables it creates; an older catalog gets the ones added since here.
        for table in metadata.sorted_tables:
            for index in table.indexes:
                index.create(engine, checkfirst=True)
        with engine.begin() as conn:
            if conn.execute(sa.select(log_head.c.id).where(log_head.c.id == 1)).first() is None:
                conn.execute(log_head.insert().values(id=1, seq=0))
            if engine.dialect.name == "postgresql":
                _ensure_publish_function(conn)

    # Several processes may open a fresh catalog at once; the loser of a CREATE race simply retries.
    retry_transient(create, attempts=5)


def _add_new_columns(engine: Engine) -> None:
    """A catalog made by an older version lacks the nullable columns added since: add them (NULL in old rows).
    A concurrent opener may add one first; the caller retries and then finds it."""
    inspector = sa.inspect(engine)
    quote = engine.dialect.identifier_preparer.quote
    for table in metadata.sorted_tables:
        present = {c["name"] for c in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present or not column.nullable:
                continue
            with engine.begin() as conn:
                conn.exec_driver_sql(
                    f"ALTER TABLE {quote(table.name)} ADD COLUMN {quote(column.name)} "
                    f"{column.type.compile(dialect=engine.dialect)}"
                )
                fill = FILL_ADDED_COLUMN.get((table.name, column.name))
                if fill is not None:
                    fill(conn)


def _ensure_publish_function(conn: sa.Connection) -> None:
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
