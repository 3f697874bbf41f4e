"""``tables``: the published tables every engine reads (docs/READING.md) — how far each is behind the catalog's
pointers, and bringing them in line."""

from __future__ import annotations

import sys

import click

from .app import AppContext, cli, emit, json_option

ASSET_OPTION = click.option("--asset", "assets", multiple=True,
                            help="Only this gated asset (repeatable; default: all).")


@cli.group(invoke_without_command=True)
@ASSET_OPTION
@json_option
@click.pass_context
def tables(ctx: click.Context, assets: tuple[str, ...], as_json: bool) -> None:
    """Each gated asset's published tables (BACKFILL_PUBLISHED_TABLES: Iceberg by default): the publish log
    position each holds and the days whose pointer moved after it. Exit status 1 when a table is behind or cannot
    be read, 0 when every table is in line.

    Example: backfill-assets tables --asset order_facts
    """
    if ctx.invoked_subcommand is not None:
        return
    app: AppContext = ctx.obj
    lags = app.service().tables(list(assets))

    def human() -> None:
        if not lags:
            click.echo("no published tables (BACKFILL_PUBLISHED_TABLES=none): readers read through the library")
        for lag in lags:
            if lag.error:
                click.echo(f"{lag.table}  cannot be read: {lag.error}")
            elif lag.days_behind:
                days = lag.days_behind
                span = days[0] if len(days) == 1 else f"{days[0]}..{days[-1]}"
                click.echo(f"{lag.table}  behind: {len(days)} day(s) not switched ({span}); "
                           f"at publish log seq {lag.seq}")
            else:
                click.echo(f"{lag.table}  in line (publish log seq {lag.seq})")

    emit([lag.as_dict() for lag in lags], as_json, human)
    if any(not lag.in_line for lag in lags):
        sys.exit(1)


@tables.command("sync")
@ASSET_OPTION
@json_option
@click.pass_obj
def sync(app: AppContext, assets: tuple[str, ...], as_json: bool) -> None:
    """Bring the published tables to the catalog's pointers now (the daemon does it every 30 s, each step after
    its publishes). Exit status 1 when a table could not be synced (it keeps serving what it held).

    Example: backfill-assets tables sync
    """
    report = app.service().sync_tables(list(assets))

    def human() -> None:
        for result in report.synced:
            if result.days:
                click.echo(f"{result.table}: {len(result.days)} day(s) switched, publish log seq {result.seq}")
            else:
                click.echo(f"{result.table}: in line (publish log seq {result.seq})")
        for table, why in report.failed:
            click.echo(f"{table}: not synced — {why}")

    emit(report.as_dict(), as_json, human)
    if report.failed:
        sys.exit(1)
