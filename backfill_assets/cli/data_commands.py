"""Commands over data and versions: seed, versions, read, rollback."""

from __future__ import annotations

import io
from datetime import date

import click
from rich.console import Console
from rich.table import Table

from backfill_assets.core.domain import DEMO_FIRST_DAY, DEMO_TIMEZONE, require_asset
from backfill_assets.core.errors import InvalidInput, NotFound
from backfill_assets.core.identity import validate_text
from backfill_assets.core.intervals import BusinessCalendar
from backfill_assets.core.source import SourceSystem
from backfill_assets.core.states import VERIFIED, VersionState

from .app import AppContext, cli, emit, json_option

DEMO_CALENDAR = BusinessCalendar(DEMO_TIMEZONE, date.fromisoformat(DEMO_FIRST_DAY))


def _cell(asset: str, partition: str) -> tuple[str, str]:
    require_asset(asset)
    DEMO_CALENDAR.interval(partition)  # validates the key as a business day of the partitions definition
    return asset, partition


@cli.command()
@click.option("--from", "first", required=True, help="First business day, YYYY-MM-DD.")
@click.option("--to", "last", required=True, help="Last business day, inclusive.")
@click.option("--orders-per-day", default=2000, show_default=True, type=int)
@json_option
@click.pass_obj
def seed(app: AppContext, first: str, last: str, orders_per_day: int, as_json: bool) -> None:
    """Fill the source system with deterministic synthetic orders (UTC timestamps).

    Example: backfill-assets seed --from 2022-09-01 --to 2022-11-30
    """
    keys = DEMO_CALENDAR.keys_between(first, last)
    inserted = SourceSystem(app.settings().source_url).seed(DEMO_CALENDAR, first, last, orders_per_day)
    result = {"days": len(keys), "inserted_rows": inserted, "source_url": app.settings().source_url}
    emit(result, as_json, f"seeded {len(keys)} business days, {inserted} new source rows")


@cli.command()
@click.argument("asset")
@click.argument("partition")
@json_option
@click.pass_obj
def versions(app: AppContext, asset: str, partition: str, as_json: bool) -> None:
    """List every version of one partition with its state, rows, digest and the four times.

    Example: backfill-assets versions daily_revenue 2022-10-17 --json
    """
    _cell(asset, partition)
    catalog = app.catalog()
    rows = [v.as_dict() for v in catalog.versions_of(asset, partition)]
    current = catalog.current(asset, partition)
    for row in rows:
        row["current"] = current is not None and row["version_id"] == current.version_id

    def human() -> None:
        table = Table(title=f"{asset} {partition}")
        for col in ("version", "state", "rows", "sha256", "requested", "started", "ended", "published"):
            table.add_column(col)
        for r in rows:
            table.add_row(
                ("* " if r["current"] else "  ") + r["version_id"],
                r["state"],
                str(r["rows"] if r["rows"] is not None else ""),
                (r["sha256"] or "")[:12],
                r["requested_at"] or "",
                r["started_at"] or "",
                r["ended_at"] or "",
                r["published_at"] or "",
            )
        Console().print(table)

    emit(rows, as_json, human)


@cli.command()
@click.argument("asset")
@click.argument("partition")
@click.option("--version", "version_id", default=None, help="A verified version instead of the current one.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("--reader", default="cli", show_default=True, help="Recorded as the external consumer.")
@click.pass_obj
def read(app: AppContext, asset: str, partition: str, version_id: str | None, fmt: str, reader: str) -> None:
    """Print the published data of a partition (sha256-verified), recording the read.

    Example: backfill-assets read daily_revenue 2022-10-17 --format json
    """
    _cell(asset, partition)
    validate_text(reader, "--reader", 120)
    catalog = app.catalog()
    if version_id is None:
        version = catalog.current(asset, partition)
        if version is None:
            raise NotFound(f"{asset} {partition} has no published version")
    else:
        version = catalog.get(version_id)
        if (version.asset, version.partition_key) != (asset, partition):
            raise InvalidInput(f"version {version_id} is not a version of {asset} {partition}")
        if VersionState(version.state) not in VERIFIED:
            raise InvalidInput(f"version {version_id} is {version.state}; only verified versions can be read")
    frame = app.warehouse().read_verified(version.path, version.sha256, version.rows)
    catalog.record_external_read(reader, version)
    if fmt == "json":
        click.echo(frame.to_json(orient="records", date_format="iso"))
    else:
        buffer = io.StringIO()
        frame.to_csv(buffer, index=False)
        click.echo(buffer.getvalue(), nl=False)


@cli.command()
@click.argument("asset")
@click.argument("partition")
@click.option("--to", "to_version", default=None, help="Version to restore (default: the previous verified one).")
@click.option("--reason", required=True, help="Why; recorded in the publish log.")
@click.option("--cascade", is_flag=True, help="Create a request re-running every consumer of the bad version.")
@json_option
@click.pass_obj
def rollback(
    app: AppContext, asset: str, partition: str, to_version: str | None, reason: str, cascade: bool, as_json: bool
) -> None:
    """Move the current pointer back to a verified version and list everyone who read the bad one.

    Example: backfill-assets rollback daily_revenue 2022-10-17 --reason "wrong FX rates"
    """
    _cell(asset, partition)
    move = app.catalog().rollback(asset, partition, reason, to_version)
    consumers = [c.__dict__ for c in move.consumers_of_previous]
    cascade_request = None
    if cascade:
        from .ops_commands import cascade_request_for_consumers

        cascade_request = cascade_request_for_consumers(app, move.consumers_of_previous, reason)
    result = {
        "asset": asset,
        "partition_key": partition,
        "rolled_back": move.previous_version_id,
        "restored": move.version_id,
        "seq": move.seq,
        "consumers": consumers,
        "cascade_request_id": cascade_request,
    }

    def human() -> None:
        click.echo(f"rolled back {move.previous_version_id}\nrestored    {move.version_id}")
        click.echo(f"{len(consumers)} consumer(s) read the rolled-back version:")
        for c in consumers:
            click.echo(f"  {c['consumer']}  run={c['consumer_run_id'] or '-'}  request={c['request_id'] or '-'}")
        if cascade:
            click.echo(f"cascade request: {cascade_request or 'none (no downstream version read it)'}")

    emit(result, as_json, human)
