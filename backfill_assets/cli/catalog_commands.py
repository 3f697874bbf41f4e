"""``backfill-assets catalog version``, ``catalog upgrade`` and ``catalog init``: the catalog's schema version, its
upgrade, and an empty one created on purpose."""

from __future__ import annotations

import click

from backfill_assets.service.catalog_schema import (
    SchemaStatus,
    catalog_schema,
    init_catalog_schema,
    upgrade_catalog_schema,
)
from backfill_assets.service.vocabulary import UPGRADE_COMMAND, SchemaStanding

from .app import AppContext, cli, emit, json_option

# Exit status of `catalog version` when this code would refuse the catalog (an error is 2, as for every command).
NEEDS_UPGRADE_EXIT = 1

_VERDICT = {
    SchemaStanding.AT_HEAD: "up to date",
    SchemaStanding.EMPTY: "empty: the first process to open it creates it at this version",
    SchemaStanding.ABSENT: "not created yet: the first process to open it creates it at this version",
    SchemaStanding.UNVERSIONED: f"made before schema versions were recorded: run `{UPGRADE_COMMAND}`",
    SchemaStanding.OLDER: f"older than this backfill_assets: run `{UPGRADE_COMMAND}`",
    SchemaStanding.NEWER: "written by a newer backfill_assets: upgrade backfill_assets",
}


def _revision(revision: str | None) -> str:
    return revision if revision is not None else "none"


@cli.group()
def catalog() -> None:
    """The catalog's schema version: check it, upgrade it.

    The catalog is BACKFILL_CATALOG_URL, else catalog.db in the Dagster home (--home). A release whose schema is
    newer refuses to open an older catalog until `backfill-assets catalog upgrade` has run.
    """


@catalog.command("version")
@json_option
@click.pass_obj
def version(app: AppContext, as_json: bool) -> None:
    """Show the catalog's schema version and this backfill_assets' own; change nothing.

    Exit status 1 when the catalog needs an upgrade (of the catalog, or of backfill_assets), 0 otherwise.

    Example: backfill-assets catalog version
    """
    app.settings()  # DAGSTER_HOME (--home) is set: the settings name the catalog and the warehouse beside it
    status = catalog_schema()
    emit(status.as_dict(), as_json, lambda: _echo_status(status))
    if status.needs_upgrade:
        raise click.exceptions.Exit(NEEDS_UPGRADE_EXIT)


def _echo_status(status: SchemaStatus) -> None:
    click.echo(f"catalog  {status.url}")
    click.echo(f"schema   {_revision(status.revision)}")
    click.echo(f"code     {status.head}")
    click.echo(_VERDICT[status.standing])


@catalog.command("upgrade")
@json_option
@click.pass_obj
def upgrade(app: AppContext, as_json: bool) -> None:
    """Bring the catalog to this backfill_assets' schema version, in one transaction; run it again: nothing changes.

    A catalog made before schema versions were recorded gets what it lacks (tables, columns, their values in older
    rows, indexes) and then every later revision. Stop the daemon, code servers and runs of the older release first;
    two upgraders take turns. A catalog written by a newer backfill_assets is refused.

    Example: backfill-assets catalog upgrade
    """
    app.settings()
    done = upgrade_catalog_schema()
    created = done.standing_before in (SchemaStanding.EMPTY, SchemaStanding.ABSENT)
    before = "empty" if created else _revision(done.from_revision)
    emit(done.as_dict(), as_json,
         f"catalog {done.url}: {before} → {done.to_revision}" + ("" if done.changed else " (already up to date)"))


@catalog.command("init")
@click.option("--force", is_flag=True,
              help="Create it even though the warehouse holds versions: start over (they stay in the warehouse, "
              "unknown to the new catalog).")
@json_option
@click.pass_obj
def init(app: AppContext, force: bool, as_json: bool) -> None:
    """Create an empty or missing catalog at this backfill_assets' schema version; change nothing else.

    The first process to open a catalog creates it this way anyway, but only while the warehouse holds no version:
    beside a warehouse with versions an empty or missing catalog is refused (it would hide every published
    version). Restore the catalog from a backup then; or, to start over on purpose, run this with --force. A
    catalog that already has tables is never touched.

    Example: backfill-assets catalog init --force
    """
    app.settings()
    done = init_catalog_schema(force=force)
    emit(done.as_dict(), as_json, f"catalog {done.url}: created empty at schema version {done.to_revision}")
