"""Which schema a catalog has, and the Alembic revisions that move it (engine/store/migrations/, package data).

A catalog records its revision in one table, ``backfill_catalog_version`` (Alembic's version table under a name of
its own, so a catalog sharing a database with Dagster's storage, which has its own ``alembic_version``, never
mixes the two). ``HEAD`` is the revision this code's ``schema.metadata`` is; a test checks that it is the
revisions' head and that migrating an empty database to it gives exactly ``schema.metadata``.

Nothing here opens an engine: ``db.engine_for`` checks a catalog when a process first opens it, and
``catalog_upgrade`` runs the command. Alembic is imported only when a catalog is created or upgraded.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from backfill_assets.engine.model.errors import CatalogSchemaMismatch
from backfill_assets.engine.store.schema import log_head, metadata

if TYPE_CHECKING:
    from alembic.config import Config

VERSION_TABLE = "backfill_catalog_version"
HEAD = "0008"
MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
UPGRADE_COMMAND = "backfill-assets catalog upgrade"
# PostgreSQL: the advisory lock every creator and upgrader of a catalog takes first, so they run one at a time.
SCHEMA_LOCK = "backfill_assets.catalog_schema"



class SchemaStanding(StrEnum):
    """Where a catalog stands for this code: what its stored revision says (or that it does not exist yet)."""

    AT_HEAD = "at head"
    EMPTY = "empty"  # no catalog table: created at head when opened
    UNVERSIONED = "unversioned"  # made before schema versions were recorded: an upgrade brings it to head
    OLDER = "older"  # an upgrade brings it to head
    NEWER = "newer"  # a later backfill_assets wrote it, or a revision this code does not have
    ABSENT = "absent"  # a SQLite catalog whose file does not exist yet: the first process to open it creates it


def alembic_config(connection: sa.Connection) -> Config:
    """Alembic's configuration for the packaged revisions, on ``connection`` (no alembic.ini: the package knows
    where its revisions are)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def known_revisions() -> set[str]:
    """Every revision this code has (reads the revision files)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(MIGRATIONS_DIR))
    return {r.revision for r in script.walk_revisions()}


def read_revision(conn: sa.Connection) -> str | None:
    """The catalog's revision; None when it has none (no version table, or no row in it). Raises the database's
    error when the version table is missing, so ``db`` can try it first in one query."""
    rows = conn.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    # One line of revisions, never branches: two rows would be a catalog this code did not write.
    return "+".join(sorted(rows)) or None


def inspect_revision(conn: sa.Connection) -> tuple[str | None, bool]:
    """(its revision, whether it holds any catalog table), asking first whether the tables exist."""
    tables = set(sa.inspect(conn).get_table_names())
    revision = read_revision(conn) if VERSION_TABLE in tables else None
    return revision, bool(tables & set(metadata.tables))


def missing_tables(conn: sa.Connection) -> list[str]:
    """The tables of ``schema.metadata`` the catalog lacks (one query of the database's own table list): a
    revision at head says nothing about a table dropped since."""
    present = set(sa.inspect(conn).get_table_names())
    return sorted(set(metadata.tables) - present)


def standing(revision: str | None, has_tables: bool) -> SchemaStanding:
    """Where a catalog stands for this code: at head, empty, unversioned, older or newer (``SchemaStanding``)."""
    if revision == HEAD:
        return SchemaStanding.AT_HEAD
    if revision is None:
        return SchemaStanding.UNVERSIONED if has_tables else SchemaStanding.EMPTY
    return SchemaStanding.OLDER if revision in known_revisions() else SchemaStanding.NEWER


def shown_url(url: str) -> str:
    """The catalog URL as messages and reports show it: its password hidden."""
    return make_url(url).render_as_string(hide_password=True)


def mismatch(url: str, revision: str | None, where: SchemaStanding) -> CatalogSchemaMismatch:
    """The refusal a process opening a catalog not at ``HEAD`` gets: what it is, what is needed, what to run."""
    shown = shown_url(url)
    if where is SchemaStanding.NEWER:
        return CatalogSchemaMismatch(
            f"catalog {shown} is at schema version {revision}, which this backfill_assets does not know (it needs "
            f"{HEAD}): upgrade backfill_assets"
        )
    has = "has no schema version" if revision is None else f"is at schema version {revision}"
    return CatalogSchemaMismatch(
        f"catalog {shown} {has}, this backfill_assets needs {HEAD}: run `{UPGRADE_COMMAND}`"
    )


def lock_schema(conn: sa.Connection) -> None:
    """Make concurrent creators and upgraders take turns, until ``conn``'s transaction ends. SQLite needs nothing:
    the catalog's writers begin with BEGIN IMMEDIATE, which already holds its one write lock."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": SCHEMA_LOCK})


def create_at_head(conn: sa.Connection) -> None:
    """An empty database becomes a catalog at ``HEAD``: today's tables at once (no need to replay history) and the
    version stamped, in the caller's transaction."""
    from alembic import command

    metadata.create_all(conn)
    conn.execute(log_head.insert().values(id=1, seq=0))
    command.stamp(alembic_config(conn), HEAD)


def upgrade_to_head(conn: sa.Connection) -> None:
    """Run every revision after the catalog's own (all of them for one made before versions were recorded, whose
    baseline adds what it lacks) and stamp each, in the caller's transaction."""
    from alembic import command

    command.upgrade(alembic_config(conn), "head")


def schema_differences(conn: sa.Connection) -> list[Any]:
    """What differs between the catalog's tables and ``schema.metadata`` (Alembic's autogenerate comparison;
    the version table is not part of it). Empty when a catalog is exactly today's schema."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE, "compare_type": True})
    differences: list[Any] = compare_metadata(context, metadata)
    return differences
