"""The SQL of the PostgreSQL published tables (``engine/tables/postgres_table.py`` decides what to switch; this
module says how, in PostgreSQL's words).

In schema ``<schema>`` (``published`` by default):

- ``<asset>``: the table readers read, ``PARTITION BY LIST (partition_date)``, one attached partition per day.
- ``<asset>__v_<12 hex>``: one table per loaded version (the hex digests its version id), created and filled by
  COPY in one transaction, with ``CHECK (partition_date = '<day>')`` so that attaching it scans nothing.
- ``_loaded``: every version table and what it holds (``detached_at`` set when it stops serving: ``expire`` drops
  the ones detached before its cutoff).
- ``_serving``: which version's table each (asset, day) has attached; written in the same transaction as the
  DETACH and ATTACH it describes.
- ``_synced``: the publish-log position of the pointers each asset's last sync compared its table with.

Every switch of an asset runs under a transaction-level advisory lock of that asset (``lock_asset``), which also
keeps ``expire`` from dropping a table a switch is about to attach; loads lock their version table's name only.
Identifiers are always quoted (``_q``); the only literals written into SQL are ISO dates this module formats.
"""

from __future__ import annotations

import hashlib
import io
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pacsv
import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine, make_url

from backfill_assets.engine.model.errors import CatalogBusy, quoted
from backfill_assets.engine.model.identity import table_name_of
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.db import create_engine
from backfill_assets.engine.store.engine_cache import EngineCache
from backfill_assets.engine.store.pg_types import MAX_IDENTIFIER_BYTES, PgTableError, csv_ready, table_columns

LOADED, SERVING, SYNCED = "_loaded", "_serving", "_synced"
LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE of a lock waited on past lock_timeout
# Two-key advisory locks (class, hashtext(name)) live apart from the catalog's one-key ones.
LOCK_CLASS = 0x62667462  # "bftb"
VERSION_TABLE_INFIX = "__v_"
VERSION_DIGEST_CHARS = 12
ASSET_PREFIX_CHARS = MAX_IDENTIFIER_BYTES - len(VERSION_TABLE_INFIX) - VERSION_DIGEST_CHARS

_engines = EngineCache()


@dataclass(frozen=True)
class Served:
    """One day's attached partition: the version it holds and that version's table."""

    version_id: str
    table_name: str


@dataclass(frozen=True)
class DaySwitch:
    """Attach ``table_name`` (version ``version_id``) as the partition of ``day``, detaching what held it."""

    day: str
    version_id: str
    table_name: str


def tables_engine(url: str) -> Engine:
    """One engine per URL per process: no statement timeout (a load copies a whole version); each transaction
    sets the lock timeout it can afford (``lock_timeout``)."""
    return _engines.get(url, lambda: create_engine(url))


def dispose_engines() -> None:
    _engines.dispose_all()


def same_database(url_a: str, url_b: str) -> bool:
    """Whether two PostgreSQL URLs name one database (host, port, database; the role and driver may differ)."""
    a, b = make_url(url_a), make_url(url_b)
    if a.get_backend_name() != "postgresql" or b.get_backend_name() != "postgresql":
        return False
    return (a.host or "localhost", a.port or 5432, a.database) == (b.host or "localhost", b.port or 5432, b.database)


def version_table_name(version: Version) -> str:
    """``<asset>__v_<12 hex of sha256(version_id)>``, the asset cut so the name fits 63 bytes."""
    digest = hashlib.sha256(version.version_id.encode()).hexdigest()[:VERSION_DIGEST_CHARS]
    return f"{table_name_of(version.asset)[:ASSET_PREFIX_CHARS]}{VERSION_TABLE_INFIX}{digest}"


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _qualified(schema: str, name: str) -> str:
    return f"{_q(schema)}.{_q(name)}"


def _day_literal(day: str) -> str:
    return f"'{date.fromisoformat(day).isoformat()}'"  # parsed, then formatted: nothing else reaches the SQL


# ---- locks and the transaction's settings ------------------------------------------------------------------------


def lock_asset(conn: Connection, schema: str, asset: str) -> None:
    """The asset's switch lock, held to the end of the transaction (waits up to the transaction's lock_timeout)."""
    _advisory_lock(conn, f"asset:{schema}.{asset}")


def _advisory_lock(conn: Connection, key: str) -> None:
    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:cls, hashtext(:key))"), {"cls": LOCK_CLASS, "key": key})


def has_written(conn: Connection) -> bool:
    """Whether the transaction already wrote (or row-locked) anything: it may then hold catalog row locks, so it
    must not wait for a lock a reader of a published table can hold."""
    written: bool = conn.execute(sa.text("SELECT txid_current_if_assigned() IS NOT NULL")).scalar_one()
    return written


@contextmanager
def lock_timeout(conn: Connection, seconds: float, what: str) -> Iterator[None]:
    """The transaction's lock_timeout for the block, the one before restored after it (a catalog transaction
    goes on with its own). A lock waited on past it raises ``PgTableError`` naming ``what``."""
    previous = conn.execute(sa.text("SELECT current_setting('lock_timeout')")).scalar_one()
    _set_lock_timeout(conn, f"{max(1, int(seconds * 1000))}ms")
    try:
        yield
    except (sa.exc.OperationalError, CatalogBusy) as exc:
        # On the catalog's own connection its error hook has already named the timeout as the catalog's.
        if not isinstance(exc, CatalogBusy) and getattr(exc.orig, "pgcode", None) != LOCK_NOT_AVAILABLE:
            raise
        raise PgTableError(
            f"{what}: a lock was still held after {seconds:g} s (a reader's long query or open transaction on the "
            "table, or another sync; pg_stat_activity names the session); the next sync applies what is missing"
        ) from exc
    _set_lock_timeout(conn, previous)


def _set_lock_timeout(conn: Connection, value: str) -> None:
    conn.execute(sa.text("SELECT set_config('lock_timeout', :value, true)"), {"value": value})


# ---- bookkeeping ---------------------------------------------------------------------------------------------------


def ensure_schema(engine: Engine, schema: str) -> None:
    """The schema and its bookkeeping tables (idempotent; concurrent callers wait for the first)."""
    s = _q(schema)
    with engine.begin() as conn:
        _advisory_lock(conn, f"schema:{schema}")
        conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {s}")
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {s}.{_q(LOADED)} (table_name text PRIMARY KEY, asset text NOT NULL, "
            "partition_date date NOT NULL, version_id text NOT NULL UNIQUE, rows bigint NOT NULL, "
            "sha256 text NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now(), detached_at timestamptz)"
        )
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {s}.{_q(SERVING)} (asset text NOT NULL, partition_date date NOT NULL, "
            "version_id text NOT NULL, table_name text NOT NULL, switched_at timestamptz NOT NULL DEFAULT now(), "
            "switched_by text NOT NULL, PRIMARY KEY (asset, partition_date))"
        )
        conn.exec_driver_sql(
            f"CREATE TABLE IF NOT EXISTS {s}.{_q(SYNCED)} (asset text PRIMARY KEY, seq bigint NOT NULL, "
            "synced_at timestamptz NOT NULL DEFAULT now())"
        )


def serving(conn: Connection, schema: str, asset: str) -> dict[str, Served]:
    """Every day of the asset's table: the version its attached partition holds."""
    rows = conn.execute(
        sa.text(f"SELECT partition_date, version_id, table_name FROM {_qualified(schema, SERVING)} "
                "WHERE asset = :asset ORDER BY partition_date"),
        {"asset": asset},
    ).all()
    return {r.partition_date.isoformat(): Served(r.version_id, r.table_name) for r in rows}


def position(conn: Connection, schema: str, asset: str) -> int:
    seq = conn.execute(sa.text(f"SELECT seq FROM {_qualified(schema, SYNCED)} WHERE asset = :asset"),
                       {"asset": asset}).scalar()
    return int(seq or 0)


def record_position(conn: Connection, schema: str, asset: str, seq: int) -> None:
    conn.execute(
        sa.text(f"INSERT INTO {_qualified(schema, SYNCED)} AS s (asset, seq) VALUES (:asset, :seq) "
                "ON CONFLICT (asset) DO UPDATE SET seq = GREATEST(s.seq, EXCLUDED.seq), synced_at = now()"),
        {"asset": asset, "seq": seq},
    )


def loaded_table(conn: Connection, schema: str, version_id: str) -> str | None:
    """The version's table when it is loaded (its ``_loaded`` row and the table itself both exist)."""
    return conn.execute(
        sa.text(f"SELECT table_name FROM {_qualified(schema, LOADED)} "
                "WHERE version_id = :vid AND to_regclass(quote_ident(:schema) || '.' || quote_ident(table_name)) "
                "IS NOT NULL"),
        {"vid": version_id, "schema": schema},
    ).scalar()


# ---- loading a version ---------------------------------------------------------------------------------------------


def load_version(engine: Engine, schema: str, version: Version, table: pa.Table, wait_seconds: float) -> str:
    """Create the version's own table and COPY its rows in one transaction, checking the count against
    ``version.rows``; returns the table's name. A version already loaded is left as it is."""
    name = version_table_name(version)
    columns = table_columns(table)
    with engine.begin() as conn:
        with lock_timeout(conn, wait_seconds, f"loading {version.version_id} into {schema}.{name}"):
            _advisory_lock(conn, f"load:{schema}.{name}")
        if loaded_table(conn, schema, version.version_id) == name:
            return name
        conn.execute(sa.text(f"DELETE FROM {_qualified(schema, LOADED)} WHERE table_name = :name"), {"name": name})
        if conn.execute(sa.text("SELECT to_regclass(:t)"), {"t": _qualified(schema, name)}).scalar() is not None:
            raise PgTableError(
                f"table {schema}.{name} exists but the published tables did not load it ({schema}.{LOADED} has no "
                "row for it): drop or rename it"
            )
        body = ", ".join(f"{_q(n)} {t}" + (" NOT NULL" if n == DAY_COLUMN else "") for n, t in columns)
        conn.exec_driver_sql(
            f"CREATE TABLE {_qualified(schema, name)} ({body}, CONSTRAINT partition_day "
            f"CHECK ({_q(DAY_COLUMN)} = {_day_literal(version.partition_key)}))"
        )
        copied = _copy(conn, _qualified(schema, name), table, [n for n, _ in columns])
        if copied != version.rows:
            raise PgTableError(f"version {version.version_id}: COPY loaded {copied} rows, the catalog says "
                               f"{version.rows}")
        conn.execute(
            sa.text(f"INSERT INTO {_qualified(schema, LOADED)} (table_name, asset, partition_date, version_id, rows, "
                    "sha256) VALUES (:name, :asset, :day, :vid, :rows, :sha)"),
            {"name": name, "asset": version.asset, "day": date.fromisoformat(version.partition_key),
             "vid": version.version_id, "rows": copied, "sha": version.sha256},
        )
    return name


def _copy(conn: Connection, target: str, table: pa.Table, names: list[str]) -> int:
    """COPY the table's columns ``names`` as CSV through psycopg2; returns the rows the server says it copied."""
    payload = io.BytesIO()
    # pyarrow-stubs type pa.table's mapping as arrays only; pyarrow takes chunked arrays there too.
    selected = pa.table({n: csv_ready(table.column(n)) for n in names})  # type: ignore[misc]
    pacsv.write_csv(selected, payload, pacsv.WriteOptions(include_header=False))
    payload.seek(0)
    column_list = ", ".join(_q(n) for n in names)
    driver = conn.connection.driver_connection
    assert driver is not None  # None only for a connection SQLAlchemy invalidated, never one in a transaction
    cursor = driver.cursor()
    try:
        cursor.copy_expert(f"COPY {target} ({column_list}) FROM STDIN WITH (FORMAT csv, ENCODING 'UTF8')", payload)
        return int(cursor.rowcount)
    finally:
        cursor.close()


# ---- switching days ------------------------------------------------------------------------------------------------


def switch_days(conn: Connection, schema: str, asset: str, switches: list[DaySwitch], by: str) -> None:
    """In the caller's transaction (which holds ``lock_asset``): per day, DETACH the partition serving it (if any)
    and ATTACH the new version's table, recording both in ``_serving`` and ``_loaded``. The parent is locked
    first (ACCESS EXCLUSIVE, as DETACH needs): its readers see every day as it was or as it becomes, whole."""
    if not switches:
        return
    parent = _qualified(schema, table_name_of(asset))
    if _columns(conn, schema, table_name_of(asset)) == {}:
        first = _qualified(schema, switches[0].table_name)
        conn.exec_driver_sql(f"CREATE TABLE {parent} (LIKE {first}) PARTITION BY LIST ({_q(DAY_COLUMN)})")
    current = serving(conn, schema, asset)
    olds = [current[s.day].table_name for s in switches if s.day in current]
    tables = [parent, *(_qualified(schema, s.table_name) for s in switches), *(_qualified(schema, t) for t in olds)]
    conn.exec_driver_sql(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
    for switch in switches:
        _switch_day(conn, schema, asset, switch, current.get(switch.day), by)


def _switch_day(conn: Connection, schema: str, asset: str, switch: DaySwitch, old: Served | None, by: str) -> None:
    parent = _qualified(schema, table_name_of(asset))
    _align_columns(conn, schema, asset, switch.table_name)
    if old is not None:
        conn.exec_driver_sql(f"ALTER TABLE {parent} DETACH PARTITION {_qualified(schema, old.table_name)}")
        conn.execute(sa.text(f"UPDATE {_qualified(schema, LOADED)} SET detached_at = now() WHERE table_name = :t"),
                     {"t": old.table_name})
    conn.exec_driver_sql(
        f"ALTER TABLE {parent} ATTACH PARTITION {_qualified(schema, switch.table_name)} "
        f"FOR VALUES IN ({_day_literal(switch.day)})"
    )
    conn.execute(sa.text(f"UPDATE {_qualified(schema, LOADED)} SET detached_at = NULL WHERE table_name = :t"),
                 {"t": switch.table_name})
    conn.execute(
        sa.text(f"INSERT INTO {_qualified(schema, SERVING)} AS s (asset, partition_date, version_id, table_name, "
                "switched_by) VALUES (:asset, :day, :vid, :t, :by) ON CONFLICT (asset, partition_date) DO UPDATE "
                "SET version_id = EXCLUDED.version_id, table_name = EXCLUDED.table_name, switched_at = now(), "
                "switched_by = EXCLUDED.switched_by"),
        {"asset": asset, "day": date.fromisoformat(switch.day), "vid": switch.version_id, "t": switch.table_name,
         "by": by},
    )


def _align_columns(conn: Connection, schema: str, asset: str, table_name: str) -> None:
    """Give the parent the version's new columns and the version's table the parent's other ones (NULL): ATTACH
    wants the same columns with the same types. A column whose type changed is refused, unless one side holds no
    row (``_retype_where_empty``)."""
    parent, part = _columns(conn, schema, table_name_of(asset)), _columns(conn, schema, table_name)
    changed = {n: (parent[n], t) for n, t in part.items() if n in parent and parent[n] != t}
    if changed and _retype_where_empty(conn, schema, asset, table_name, changed):
        parent, part = _columns(conn, schema, table_name_of(asset)), _columns(conn, schema, table_name)
        changed = {}
    if changed:
        name, (was, now) = next(iter(changed.items()))
        raise PgTableError(
            f"{schema}.{table_name_of(asset)}: column {quoted(name)} is {was} in the table but {now} in {table_name}; "
            "a column's "
            "type cannot change in a published table (name the new column differently, or drop the table to "
            "rebuild it)"
        )
    for name, typ in part.items():
        if name not in parent:
            conn.exec_driver_sql(f"ALTER TABLE {_qualified(schema, table_name_of(asset))} ADD COLUMN {_q(name)} {typ}")
    for name, typ in parent.items():
        if name not in part:
            conn.exec_driver_sql(f"ALTER TABLE {_qualified(schema, table_name)} ADD COLUMN {_q(name)} {typ}")


def _retype_where_empty(conn: Connection, schema: str, asset: str, table_name: str,
                        changed: dict[str, tuple[str, str]]) -> bool:
    """A day without rows has columns of no real type (an empty frame's are Arrow's null or pandas' float): the
    version's table takes the parent's types when it is empty, or the parent (and its partitions) the version's when
    no day it serves has a row. False when both hold rows: the change is refused."""
    parent, part = _qualified(schema, table_name_of(asset)), _qualified(schema, table_name)
    if _is_empty(conn, part):
        target, types = part, {name: was for name, (was, _) in changed.items()}
    elif _is_empty(conn, parent):
        target, types = parent, {name: now for name, (_, now) in changed.items()}
    else:
        return False
    for name, typ in types.items():
        conn.exec_driver_sql(f"ALTER TABLE {target} ALTER COLUMN {_q(name)} TYPE {typ} USING NULL::{typ}")
    return True


def _is_empty(conn: Connection, table: str) -> bool:
    return conn.exec_driver_sql(f"SELECT NOT EXISTS (SELECT 1 FROM {table})").scalar() is True


def _columns(conn: Connection, schema: str, table_name: str) -> dict[str, str]:
    rows = conn.execute(
        sa.text("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
                "WHERE a.attrelid = to_regclass(:t) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"),
        {"t": _qualified(schema, table_name)},
    ).all()
    return {r[0]: r[1] for r in rows}


# ---- expiry --------------------------------------------------------------------------------------------------------


def expire_tables(conn: Connection, schema: str, asset: str, older_than: datetime) -> int:
    """In the caller's transaction (holding ``lock_asset``): drop the asset's version tables that serve no day and
    stopped serving (or were loaded, never attached) before ``older_than``; returns how many."""
    doomed = conn.execute(
        sa.text(f"SELECT l.table_name FROM {_qualified(schema, LOADED)} l WHERE l.asset = :asset "
                f"AND NOT EXISTS (SELECT 1 FROM {_qualified(schema, SERVING)} s WHERE s.table_name = l.table_name) "
                "AND COALESCE(l.detached_at, l.loaded_at) < :cutoff ORDER BY l.table_name"),
        {"asset": asset, "cutoff": older_than},
    ).scalars().all()
    for name in doomed:
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {_qualified(schema, name)}")
        conn.execute(sa.text(f"DELETE FROM {_qualified(schema, LOADED)} WHERE table_name = :t"), {"t": name})
    return len(doomed)
