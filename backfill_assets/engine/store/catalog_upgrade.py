"""``backfill-assets catalog version`` and ``catalog upgrade`` over a catalog URL, whatever its schema version: they
open their own engine, never ``db.engine_for`` (which refuses a catalog not at head)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from sqlalchemy.engine import Engine, make_url

from backfill_assets.engine.model.errors import CatalogDamaged, InvalidInput
from backfill_assets.engine.model.json_records import as_json_dict
from backfill_assets.engine.store import schema_version as V
from backfill_assets.engine.store.db import (
    READ_ONLY,
    RESTORE_HINT,
    catalog_engine,
    ensure_publish_function,
    refuse_empty_beside_versions,
    refuse_unusable_file,
    retry_transient,
)
from backfill_assets.engine.store.schema_version import SchemaStanding


@dataclass(frozen=True)
class SchemaStatus:
    """Where a catalog stands: its revision (None: none recorded) and what this code's is."""

    url: str  # the password hidden
    revision: str | None
    head: str
    standing: SchemaStanding

    @property
    def needs_upgrade(self) -> bool:
        """True when this code refuses to open it until something is upgraded (the catalog, or backfill_assets)."""
        return self.standing in (SchemaStanding.UNVERSIONED, SchemaStanding.OLDER, SchemaStanding.NEWER)

    def as_dict(self) -> dict[str, Any]:
        return {**as_json_dict(self), "needs_upgrade": self.needs_upgrade}


@dataclass(frozen=True)
class SchemaUpgrade:
    url: str
    from_revision: str | None  # None: made before versions were recorded, or an empty database
    to_revision: str
    standing_before: SchemaStanding

    @property
    def changed(self) -> bool:
        return self.standing_before is not SchemaStanding.AT_HEAD

    def as_dict(self) -> dict[str, Any]:
        return {**as_json_dict(self), "changed": self.changed}


def schema_status(url: str, warehouse_root: str | None = None) -> SchemaStatus:
    """The catalog's schema version against this code's; reads only (a missing SQLite file is not created). A
    catalog that is not one, or at head without every table of it, is refused (``CatalogDamaged``); so is an empty
    or missing one beside a warehouse (``warehouse_root``) that holds versions (``CatalogEmpty``)."""
    shown = V.shown_url(url)
    refuse_unusable_file(url, warehouse_root)
    if _sqlite_file_missing(url):
        return SchemaStatus(shown, None, V.HEAD, SchemaStanding.ABSENT)
    with _engine(url) as engine, engine.execution_options(**{READ_ONLY: True}).connect() as conn:
        revision, has_tables = V.inspect_revision(conn)
        missing = V.missing_tables(conn) if revision == V.HEAD else []
    if missing:
        raise CatalogDamaged(
            f"catalog {shown} is at schema version {revision} but lacks its table(s) {', '.join(missing)}: "
            f"{RESTORE_HINT}"
        )
    where = V.standing(revision, has_tables)
    if where is SchemaStanding.EMPTY:
        refuse_empty_beside_versions(url, warehouse_root, "is empty")
    return SchemaStatus(shown, revision, V.HEAD, where)


def upgrade_catalog(url: str, warehouse_root: str | None = None) -> SchemaUpgrade:
    """Bring the catalog to this code's head in one transaction, under the schema lock: an empty database is created
    at head (unless ``warehouse_root`` holds versions: ``CatalogEmpty``), one made before versions were recorded
    gets the baseline (what it lacks of it) and every later revision, an older one the revisions after its own. At
    head already: nothing changes. A catalog at a revision this code does not know is refused
    (``CatalogSchemaMismatch``). On PostgreSQL this code's publish function is created too."""
    shown = V.shown_url(url)
    refuse_unusable_file(url, warehouse_root)
    with _engine(url) as engine:
        revision, where = retry_transient(lambda: _upgrade(engine, url, warehouse_root), attempts=3)
    return SchemaUpgrade(shown, revision, V.HEAD, where)


def init_catalog(url: str, warehouse_root: str | None = None, force: bool = False) -> SchemaUpgrade:
    """Create an empty or missing catalog at this code's head. Beside a warehouse that holds versions it is refused
    unless ``force`` (starting over: those versions stay in the warehouse, unknown to the new catalog). A catalog
    that already has tables is never touched (``InvalidInput``)."""
    shown = V.shown_url(url)
    refuse_unusable_file(url, None if force else warehouse_root)
    with _engine(url) as engine:
        revision, where = retry_transient(lambda: _init(engine, url, None if force else warehouse_root), attempts=3)
    return SchemaUpgrade(shown, revision, V.HEAD, where)


def _init(engine: Engine, url: str, warehouse_root: str | None) -> tuple[str | None, SchemaStanding]:
    with engine.begin() as conn:
        V.lock_schema(conn)
        revision, has_tables = V.inspect_revision(conn)
        where = V.standing(revision, has_tables)
        if where is not SchemaStanding.EMPTY:
            raise InvalidInput(
                f"catalog {V.shown_url(url)} already exists (schema version {revision or 'none'}): nothing changed; "
                "`catalog init` only creates an empty or missing one"
            )
        refuse_empty_beside_versions(url, warehouse_root, "is empty")
        V.create_at_head(conn)
        if conn.dialect.name == "postgresql":
            ensure_publish_function(conn)
    return revision, where


def _upgrade(engine: Engine, url: str, warehouse_root: str | None) -> tuple[str | None, SchemaStanding]:
    with engine.begin() as conn:
        V.lock_schema(conn)
        revision, has_tables = V.inspect_revision(conn)
        where = V.standing(revision, has_tables)
        if where is SchemaStanding.NEWER:
            raise V.mismatch(url, revision, where)
        if where is SchemaStanding.EMPTY:
            refuse_empty_beside_versions(url, warehouse_root, "is empty")
            V.create_at_head(conn)
        elif where is not SchemaStanding.AT_HEAD:
            V.upgrade_to_head(conn)
        if conn.dialect.name == "postgresql":
            ensure_publish_function(conn)
    return revision, where


def _sqlite_file_missing(url: str) -> bool:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return False
    return not Path(parsed.database).exists()


@contextmanager
def _engine(url: str) -> Iterator[Engine]:
    # Its own engine, disposed at the end: a command's connections must not outlive it (a PostgreSQL database
    # being dropped, a SQLite file being copied).
    engine = catalog_engine(url)
    try:
        yield engine
    finally:
        engine.dispose()

