"""Engines for the catalog: the same SQLAlchemy Core code on SQLite (embedded default) and PostgreSQL."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from backfill_assets.engine.model.errors import CatalogBusy, CatalogDamaged, CatalogEmpty, InvalidInput
from backfill_assets.engine.model.settings import (
    ENV_CATALOG_LOCK_TIMEOUT,
    ENV_CATALOG_STATEMENT_TIMEOUT,
    CatalogTimeouts,
)
from backfill_assets.engine.store import publish_pg, schema_version
from backfill_assets.engine.store.engine_cache import EngineCache

T = TypeVar("T")

READ_ONLY = "backfill_read_only"

_engines = EngineCache()


RESTORE_HINT = "restore it from a backup (docs/OPERATIONS.md, \"A damaged catalog\")"
LOCK_HINT = "see docs/OPERATIONS.md, \"A held catalog lock\" (pg_stat_activity names the session)"


def engine_for(url: str, warehouse_root: str | None = None) -> Engine:
    """One engine per URL per process; on first use its schema version is checked (an empty database is created at
    head, a catalog at another version refused: ``CatalogSchemaMismatch``), and so are its tables: one that is not
    a catalog is refused (``CatalogDamaged``). ``warehouse_root``: the warehouse beside it; an empty or missing
    catalog is then created only while that warehouse holds no version (``CatalogEmpty``)."""
    return _engines.get(url, lambda: _opened(url, warehouse_root))


def _opened(url: str, warehouse_root: str | None) -> Engine:
    refuse_unusable_file(url, warehouse_root)
    engine = catalog_engine(url)
    try:
        _open_checked(engine, url, warehouse_root)
    except BaseException:
        engine.dispose()  # a refused catalog keeps no pooled connection of this process
        raise
    return engine


def reader_for(url: str) -> Engine:
    """The same engine (same pool) for read-only work: on SQLite its transactions do not take the write lock."""
    return engine_for(url).execution_options(**{READ_ONLY: True})


def dispose_all() -> None:
    _engines.dispose_all()


def sql_engine(url: str, read_only: bool = False) -> Engine:
    """A SQLAlchemy engine set up as the catalog's is (SQLite: WAL, a 60 s busy timeout, BEGIN IMMEDIATE for
    writers; PostgreSQL: pre-ping), for a code location's own sources. ``read_only``: its transactions never
    take SQLite's write lock, so readers in concurrent steps do not queue behind each other."""
    engine = create_engine(url)
    return engine.execution_options(**{READ_ONLY: True}) if read_only else engine


def catalog_engine(url: str) -> Engine:
    """An engine on a catalog: PostgreSQL sessions with the settings' lock and statement timeouts, and the
    database's own errors for a damaged catalog or a lock waited on too long turned into one line naming it."""
    engine = create_engine(url, CatalogTimeouts.from_env())
    _name_catalog_errors(engine, url)
    return engine


def create_engine(url: str, timeouts: CatalogTimeouts | None = None) -> Engine:
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError for malformed URLs
        raise InvalidInput(f"catalog URL {url!r} is not a database URL") from exc
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"timeout": SQLITE_BUSY_SECONDS})
        _make_sqlite_transactional(engine)
        return engine
    if parsed.get_backend_name() == "postgresql":
        # pre_ping replaces connections a server restart has killed instead of failing the next statement.
        return sa.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=4,
                                connect_args=_pg_session_options(timeouts))
    raise InvalidInput(f"catalog URL {url!r}: only sqlite:// and postgresql:// are supported")


SQLITE_BUSY_SECONDS = 60


def _pg_session_options(timeouts: CatalogTimeouts | None) -> dict[str, str]:
    # Set when the session starts (libpq's options), so no statement of a pooled connection runs without them.
    if timeouts is None:
        return {}
    lock_ms, statement_ms = int(timeouts.lock_seconds * 1000), int(timeouts.statement_seconds * 1000)
    return {"options": f"-c lock_timeout={lock_ms} -c statement_timeout={statement_ms}"}


def _make_sqlite_transactional(engine: Engine) -> None:
    # pysqlite's implicit transactions start lazily and upgrade read locks to write locks, which deadlocks
    # concurrent publishers. Take the write lock at BEGIN instead (BEGIN IMMEDIATE), and use WAL so readers
    # are never blocked by a publish.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # sqlite3's connection (DB-API: no types)
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        _enter_wal(cursor)
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_SECONDS * 1000}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # Readers (reader_for) take no write lock: in WAL mode they see a consistent snapshot without one.
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")


def _enter_wal(cursor: Any) -> None:
    """``PRAGMA journal_mode=WAL``, tried again while another connection switches the same fresh file: SQLite
    answers "database is locked" at once there, without calling its busy handler (six processes connecting to a
    new file at the same moment: 214 rounds of 500 had one fail). Once the file is in WAL mode the pragma is a
    no-op, so only the first openers of a catalog ever wait here."""
    deadline = time.monotonic() + SQLITE_BUSY_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "database is locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(WAL_SWITCH_RETRY_SECONDS)


WAL_SWITCH_RETRY_SECONDS = 0.005


def _open_checked(engine: Engine, url: str, warehouse_root: str | None = None) -> None:
    """A catalog at this code's schema version, with every table of it, opens (two queries); an empty database
    becomes one (unless its warehouse holds versions); any other is refused with what to do, nothing changed."""
    try:
        with engine.execution_options(**{READ_ONLY: True}).connect() as conn:
            revision, has_function = _head_probe(conn)
            missing = schema_version.missing_tables(conn) if revision == schema_version.HEAD else []
    except (sa.exc.OperationalError, sa.exc.ProgrammingError):
        # No version table (or the probe could not run): decide under the schema lock, where it cannot change.
        revision = retry_transient(lambda: _create_if_empty(engine, url, warehouse_root), attempts=5)
        has_function, missing = engine.dialect.name != "postgresql", []
    where = schema_version.standing(revision, has_tables=True)
    if where is not schema_version.SchemaStanding.AT_HEAD:
        raise schema_version.mismatch(url, revision, where)
    if missing:
        raise CatalogDamaged(
            f"catalog {schema_version.shown_url(url)} is at schema version {revision} but lacks its table(s) "
            f"{', '.join(missing)}: {RESTORE_HINT}"
        )
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


def _create_if_empty(engine: Engine, url: str, warehouse_root: str | None = None) -> str | None:
    """Several processes may open a fresh catalog at once: under the schema lock, the first creates it at head and
    the others find its version. A catalog with tables but no version is left as it is (the caller refuses it), and
    so is an empty one beside a warehouse that holds versions (``CatalogEmpty``)."""
    with engine.begin() as conn:
        schema_version.lock_schema(conn)
        revision, has_tables = schema_version.inspect_revision(conn)
        if revision is not None or has_tables:
            return revision
        refuse_empty_beside_versions(url, warehouse_root, "is empty")
        schema_version.create_at_head(conn)
        if engine.dialect.name == "postgresql":
            ensure_publish_function(conn)
        return schema_version.HEAD


def refuse_empty_beside_versions(url: str, warehouse_root: str | None, state: str) -> None:
    """An empty or missing catalog is created silently only beside a warehouse that holds no version: otherwise
    every published version would vanish from view (a zero-length catalog.db, a database dropped and made anew)."""
    if warehouse_root is None:
        return
    from backfill_assets.engine.store.storage import first_stored_version  # the warehouse only when creating one

    found = first_stored_version(warehouse_root)
    if found is not None:
        raise CatalogEmpty(
            f"catalog {schema_version.shown_url(url)} {state}, but the warehouse {warehouse_root} holds versions "
            f"(such as {found}): restore the catalog from a backup, or start over with an empty catalog with "
            "`backfill-assets catalog init --force` (docs/OPERATIONS.md, \"An empty catalog beside a warehouse\")"
        )


def refuse_unusable_file(url: str, warehouse_root: str | None) -> None:
    """A SQLite catalog path that is a directory is damaged; a missing or zero-length file beside a warehouse
    holding versions is refused before SQLite creates or opens anything."""
    parsed = make_url(url) if url.startswith("sqlite") else None
    if parsed is None or parsed.database in (None, "", ":memory:"):
        return
    path = Path(parsed.database)
    if path.is_dir():
        raise CatalogDamaged(f"catalog {path} is a directory, not a SQLite database file: {RESTORE_HINT}")
    if not path.exists():
        refuse_empty_beside_versions(url, warehouse_root, "does not exist")
    elif path.stat().st_size == 0:
        refuse_empty_beside_versions(url, warehouse_root, "is empty (zero bytes)")


# What a database says when a catalog is not one, or is damaged: SQLite's messages, PostgreSQL's SQLSTATEs.
_DAMAGED_SQLITE = ("file is not a database", "database disk image is malformed")
_BUSY_SQLITE = ("database is locked",)
_PG_LOCK_TIMEOUT, _PG_QUERY_CANCELED = "55P03", "57014"


def _name_catalog_errors(engine: Engine, url: str) -> None:
    # SQLAlchemy hands every database error of this engine (connecting too) to this hook; raising here replaces it.
    @event.listens_for(engine, "handle_error")
    def _named(context: sa.engine.ExceptionContext) -> None:
        named = catalog_error(url, context.original_exception)
        if named is not None:
            raise named from context.original_exception


def catalog_error(url: str, error: BaseException) -> Exception | None:
    """The one-line error a catalog's database error means for an operator, or None for any other."""
    shown = schema_version.shown_url(url)
    text = str(error).lower()
    pgcode = getattr(error, "pgcode", None)
    if any(m in text for m in _DAMAGED_SQLITE):
        reason = " ".join(str(error).split())[:120]
        return CatalogDamaged(f"catalog {shown} is damaged or not a SQLite database ({reason}): {RESTORE_HINT}")
    if any(m in text for m in _BUSY_SQLITE):
        return CatalogBusy(
            f"catalog {shown}: database is locked by another process for over {SQLITE_BUSY_SECONDS} s (SQLite's "
            "busy timeout): find the process holding it (a stuck step, a copy of the file) and stop it"
        )
    if pgcode in (_PG_LOCK_TIMEOUT, _PG_QUERY_CANCELED):
        what = "lock_timeout" if pgcode == _PG_LOCK_TIMEOUT else "statement_timeout"
        return CatalogBusy(
            f"catalog {shown}: lock held by another session — a statement gave up after the catalog's {what} "
            f"({_timeout_setting(what)}): {LOCK_HINT}"
        )
    return None


def _timeout_setting(what: str) -> str:
    timeouts = CatalogTimeouts.from_env()
    if what == "lock_timeout":
        return f"{timeouts.lock_seconds:g} s, {ENV_CATALOG_LOCK_TIMEOUT}"
    return f"{timeouts.statement_seconds:g} s, {ENV_CATALOG_STATEMENT_TIMEOUT}"


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
