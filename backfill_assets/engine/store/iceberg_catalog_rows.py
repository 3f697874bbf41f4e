"""Where an Iceberg SQL catalog says a table's current metadata file is, read with one query.

pyiceberg's ``SqlCatalog`` keeps the JDBC catalog's schema: one row per table in ``iceberg_tables`` (catalog name,
namespace, table name, ``metadata_location``). Reading a table's position (``reconcile``, ``tables``) needs that row
and the metadata file it names, not pyiceberg: importing it is about half a second of a command's start. This
module reads the row only; anything it cannot read for certain raises ``NotReadableHere`` and the caller asks
pyiceberg, which stays the one writer (and the creator of the catalog's tables: nothing here creates or changes a
file or a table).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy.engine import Engine, make_url

from backfill_assets.engine.store.engine_cache import EngineCache

TABLES = "iceberg_tables"
# pyiceberg's ``iceberg_type`` column (schema v1): views share the table; NULL is a row written before the column.
TABLE_TYPE = "TABLE"

_engines = EngineCache()


class NotReadableHere(Exception):
    """The row could not be read for certain here (no such catalog table yet, another backend, a view's row):
    pyiceberg answers instead."""


def current_metadata_location(url: str, catalog_name: str, namespace: str, table: str) -> str | None:
    """The table's current metadata file, or None when the catalog holds no such table (or no catalog file exists
    yet: nothing was ever synced there)."""
    engine = _reader(url)
    if engine is None:
        return None
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text(f"SELECT * FROM {TABLES} WHERE catalog_name = :c AND table_namespace = :n AND table_name = :t"),
                {"c": catalog_name, "n": namespace, "t": table},
            ).mappings().first()
    except sa.exc.DBAPIError as exc:  # no catalog table yet, or the database away: pyiceberg says which
        raise NotReadableHere(f"{TABLES}: {type(exc.orig).__name__}") from exc
    if row is None:
        return None
    if row.get("iceberg_type") not in (None, TABLE_TYPE) or not row["metadata_location"]:
        raise NotReadableHere(f"{namespace}.{table}: not a table row pyiceberg would load")
    return str(row["metadata_location"])


def _reader(url: str) -> Engine | None:
    """A read-only engine on the Iceberg catalog's database (None: a SQLite file that does not exist yet). SQLite
    is opened read-only, as it is: the catalog's own engine settings (WAL, BEGIN IMMEDIATE) are not for a file
    pyiceberg owns."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise NotReadableHere("an in-memory SQLite catalog is only readable by its own process")
        path = Path(parsed.database).resolve()
        # Looked at every time: a catalog created after a first look is read at the next.
        return _engine(url, path) if path.exists() else None
    if backend == "postgresql":
        return _engine(url)
    raise NotReadableHere(f"an Iceberg catalog on {backend}")


def _engine(url: str, sqlite_file: Path | None = None) -> Engine:
    def make() -> Engine:
        if sqlite_file is None:
            return sa.create_engine(url, pool_pre_ping=True, pool_size=1, max_overflow=2)
        # SQLite's URI form, the path percent-encoded: a folder named with "#" or "%" stays a path.
        uri = f"file:{quote(str(sqlite_file))}?mode=ro"
        return sa.create_engine("sqlite://", creator=lambda: sqlite3.connect(uri, uri=True))

    return _engines.get(url, make)


def dispose_readers() -> None:
    """Close the pooled connections of every reader (a database about to be dropped, a process's end)."""
    _engines.dispose_all()
