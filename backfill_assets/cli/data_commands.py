"""Commands over data and versions: seed, versions, read (rollback is an operation: ops_commands)."""

from __future__ import annotations

import io

import click

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import DeclaredAsset
from backfill_assets.engine.model.identity import validate_text
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.request_input import MAX_SEED_ROWS_PER_DAY, seed_days
from backfill_assets.service import CellVersions

from .app import AppContext, cli, emit, json_option

# A code location may define this to fill its (demo) source for ``backfill-assets seed``.
SEED_HOOK = "seed"


def validate_cell(app: AppContext, asset: str, partition: str, data_only: bool = True) -> DeclaredAsset:
    """The asset's spec once the asset is known and the key is a business day; one-line errors otherwise."""
    graph = app.graph()
    spec = graph.require(asset, data_only=data_only)
    graph.calendar.interval(partition)  # validates the key as a business day of the partitions definition
    return spec


@cli.command()
@click.option("--from", "first", required=True, help="First business day, YYYY-MM-DD.")
@click.option("--to", "last", required=True, help="Last business day, inclusive.")
@click.option("--per-day", "--orders-per-day", "per_day", default=2000, show_default=True, type=int,
              help=f"Source rows per business day, at most {MAX_SEED_ROWS_PER_DAY}.")
@json_option
@click.pass_obj
def seed(app: AppContext, first: str, last: str, per_day: int, as_json: bool) -> None:
    """Fill an example's source system with deterministic synthetic rows (the code location's `seed` function).

    The days follow `request create`'s rule (none past the newest complete day, at most 20000 of them).

    Example: backfill-assets seed --from 2022-09-01 --to 2022-11-30
    """
    location = app.code_location()
    hook = getattr(location.module, SEED_HOOK, None)
    if not callable(hook):
        raise InvalidInput(f"{location.module_name} has no `{SEED_HOOK}(first, last, per_day)` to fill its source")
    calendar = location.graph.calendar
    # As `request create` bounds its days; checked before the hook writes anything.
    keys = seed_days(calendar, first, last, per_day, calendar.newest_complete_key(utc_now()))
    inserted = hook(first, last, per_day)
    result = {"days": len(keys), "inserted_rows": inserted, "source_url": app.settings().source_url}
    emit(result, as_json, f"seeded {len(keys)} business days, {inserted} new source rows")


@cli.command()
@click.argument("asset")
@click.argument("partition")
@json_option
@click.pass_obj
def versions(app: AppContext, asset: str, partition: str, as_json: bool) -> None:
    """List every version of one partition with its state, rows, digest, the four times and its pointer history.

    Times are stored in UTC; the interval is also shown in the business timezone with its offset. A side-effect
    asset has no versions: its state is its outbox deliveries, which are listed instead.

    Example: backfill-assets versions daily_revenue 2022-10-17 --json
    """
    validate_cell(app, asset, partition, data_only=False)
    view = app.service().cell_versions(asset, partition)
    emit(view.entries(), as_json, lambda: _echo_deliveries(view) if view.side_effect else _echo_versions(view))


def _echo_versions(view: CellVersions) -> None:
    # Lines, not a table: version ids and timestamps are too wide for a terminal table to stay readable.
    (start, end), (start_utc, end_utc) = view.interval, view.interval_utc
    click.echo(
        f"{view.asset} {view.partition_key}: [{start}, {end}) {view.timezone} = [{start_utc}, {end_utc}) UTC;"
        f" {len(view.versions)} version(s), * = current"
    )
    if view.skip_mark is not None:
        click.echo(f"  the cell is {view.skip_mark}")
    for entry in view.versions:
        _echo_version(entry.as_dict())


def _echo_version(r: dict) -> None:
    """One version of ``versions``' text: its identity, run, times, request, pointer moves and overrides."""
    rows_text = r["rows"] if r["rows"] is not None else "-"
    click.echo(
        f"{'*' if r['current'] else ' '} {r['version_id']}  {r['state']}  rows {rows_text}"
        f"  sha256 {(r['sha256'] or '-')[:12]}  code {r['code_version']}  worker {r.get('worker') or '-'}"
    )
    click.echo(
        f"    run {r['logical_run_id']} attempt {r['attempt_no']} (Dagster run {r['dagster_run_id']})"
        f"  params {r['params_digest']}  — {r['run_note']}"
    )
    click.echo(
        f"    requested {r['requested_at'] or '-'}  started {r['started_at'] or '-'}"
        f"  ended {r['ended_at'] or '-'}  published {r['published_at'] or '-'}"
    )
    click.echo(
        f"    request {r['request_id']} by {r['requested_by'] or '-'}: {r['request_reason'] or '-'}"
        if r["request_id"] else f"    no request (lane {r['lane'] or '-'})"
    )
    for ref in r["engine_refs"]:
        click.echo(f"    ran as {ref['engine']} {ref['engine_id']} (reported {ref['at']})")
    for h in r["history"]:
        why = f" ({h['reason']})" if h["reason"] else ""
        replaced = f", replacing {h['previous_version_id']}" if h["previous_version_id"] else ""
        click.echo(f"    made current by {h['action']} #{h['seq']} at {h['at']}{replaced}{why}")
    for o in r["overrides"]:
        click.echo(f"    override: {o['action']} by {o['by']} at {o['at']}: {o['reason']}")


def _echo_deliveries(view: CellVersions) -> None:
    asset, partition = view.asset, view.partition_key
    click.echo(f"{asset} is a side-effect asset: no versions; its state is its outbox deliveries")
    click.echo(f"{asset} {partition}: {len(view.deliveries)} delivery(ies)")
    for d in view.deliveries:
        click.echo(
            f"  {d.idempotency_key}  created {d.created_at}  sent {d.sent_at or 'NOT SENT'}"
            f"  run {d.run_id or '-'}  request {d.request_id or '-'}"
        )


@cli.command()
@click.argument("asset")
@click.argument("partition")
@click.option("--version", "version_id", default=None, help="A verified version instead of the current one.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("--reader", default="cli", show_default=True, help="Recorded as the external consumer.")
@json_option
@click.pass_obj
def read(
    app: AppContext, asset: str, partition: str, version_id: str | None, fmt: str, reader: str, as_json: bool
) -> None:
    """Print the published data of a partition (sha256-verified), recording the read.

    --format json prints the records alone; --json prints them with the identity of the version they came from.

    Example: backfill-assets read daily_revenue 2022-10-17 --format json
    """
    validate_cell(app, asset, partition)
    validate_text(reader, "--reader", 120)
    done = app.service().read(asset, partition, reader=reader, version_id=version_id)
    if as_json:
        emit(done.as_dict(), True)
    elif fmt == "json":
        click.echo(done.frame.to_json(orient="records", date_format="iso"))
    else:
        buffer = io.StringIO()
        done.frame.to_csv(buffer, index=False)
        click.echo(buffer.getvalue(), nl=False)
