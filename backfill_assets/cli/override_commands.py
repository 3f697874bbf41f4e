"""A person overrides what the checks decided, never silently: accept a rejected version, reject a published one,
mark cells skipped (Airflow's "mark success / mark failed / skipped"). Each writes an ``overrides`` row."""

from __future__ import annotations

import click

from backfill_assets.engine.model.identity import parse_version_id
from backfill_assets.engine.model.overrides import OverrideAction
from backfill_assets.engine.plan import overrides as override_plan

from .app import AppContext, cli, default_user, emit, json_option
from .data_commands import validate_cell
from .ops_commands import cascade_request_for_consumers, echo_consumers, tell_dagster


def _report_override(catalog, move, record):
    from backfill_assets.integration.assets.override_events import report_override

    return lambda instance: report_override(instance, catalog, move, record)


@cli.command()
@click.argument("version_id")
@click.option("--approved-by", "approved_by", required=True, help="Who checked the data and answers for it.")
@click.option("--reason", required=True, help="Why the rejection was wrong; recorded with the override.")
@click.option("--cascade", is_flag=True, help="Create a request re-running every consumer of the version replaced.")
@json_option
@click.pass_obj
def accept(app: AppContext, version_id: str, approved_by: str, reason: str, cascade: bool, as_json: bool) -> None:
    """Publish a REJECTED version on a person's word ("mark success"), recorded as an override.

    The same compare-and-swap as any publish, from the version it was judged against: a publish_log row of its
    request, which the propagation sensor follows while that request is open. Lists who read the version it
    replaced; --cascade re-runs them. Refused for any state but REJECTED, for a version whose stored file does not
    verify, and when another version became current for the day after it was judged.

    Example: backfill-assets accept daily_revenue/2022-10-17/<run id>/1 --approved-by ana --reason "holiday sales"
    """
    asset, partition, _, _ = parse_version_id(version_id)
    validate_cell(app, asset, partition)
    catalog = app.catalog()
    move, record = override_plan.accept(catalog, app.warehouse(), version_id, approved_by, reason)
    dagster_event = tell_dagster(_report_override(catalog, move, record), move, "accept")
    replaced_readers = catalog.consumers_of(move.previous_version_id) if move.previous_version_id else []
    cascade_request = None
    if cascade:
        cascade_request = cascade_request_for_consumers(
            app, replaced_readers, f"{version_id}: {record.reason}", "accept", "the replaced version"
        )
    result = {
        "accepted": version_id,
        "replaced": move.previous_version_id,
        "seq": move.seq,
        "override": record.as_dict(),
        "consumers_of_replaced": [c.__dict__ for c in replaced_readers],
        "cascade_request_id": cascade_request,
        "dagster_event": dagster_event,
    }

    def human() -> None:
        click.echo(f"accepted {version_id}\nreplaced {move.previous_version_id or 'nothing'} (publish #{move.seq})")
        click.echo(f"override: {record.summary}\nDagster: {dagster_event}")
        echo_consumers(result["consumers_of_replaced"], "the replaced version", cascade, cascade_request)

    emit(result, as_json, human)


@cli.command()
@click.argument("asset")
@click.argument("partition")
@click.option("--reason", required=True, help="What is wrong with the current version; recorded with the override.")
@click.option("--by", default=None, help="Who rejects (default: the OS user).")
@click.option("--cascade", is_flag=True, help="Create a request re-running every consumer of the rejected version.")
@json_option
@click.pass_obj
def reject(app: AppContext, asset: str, partition: str, reason: str, by: str | None, cascade: bool,
           as_json: bool) -> None:
    """Reject the current PUBLISHED version after the fact ("mark failed"): roll back to the previous verified one.

    The bad version becomes REJECTED (never a rollback target again) and everyone who read it is listed, as
    `rollback` does. Refused when there is no earlier verified version: a day is never left without data.

    Example: backfill-assets reject daily_revenue 2022-10-17 --reason "FX table was stale" --cascade
    """
    validate_cell(app, asset, partition)
    catalog = app.catalog()
    move, record = override_plan.reject(catalog, app.warehouse(), asset, partition, by or default_user(), reason)
    dagster_event = tell_dagster(_report_override(catalog, move, record), move, "reject")
    consumers = [c.__dict__ for c in move.consumers_of_previous]
    cascade_request = None
    if cascade:
        cascade_request = cascade_request_for_consumers(
            app, move.consumers_of_previous, f"{move.previous_version_id}: {record.reason}", "reject",
            "the rejected version",
        )
    result = {
        "asset": asset,
        "partition_key": partition,
        "rejected": move.previous_version_id,
        "restored": move.version_id,
        "seq": move.seq,
        "override": record.as_dict(),
        "consumers": consumers,
        "cascade_request_id": cascade_request,
        "dagster_event": dagster_event,
    }

    def human() -> None:
        click.echo(f"rejected {move.previous_version_id}\nrestored {move.version_id}\noverride: {record.summary}")
        click.echo(f"Dagster: {dagster_event}")
        echo_consumers(consumers, "the rejected version", cascade, cascade_request)

    emit(result, as_json, human)


@cli.command()
@click.argument("asset")
@click.argument("partition", required=False)
@click.option("--from", "first", default=None, help="First day of a range (with --to) instead of PARTITION.")
@click.option("--to", "last", default=None, help="Last day of the range, inclusive.")
@click.option("--reason", required=True, help="Why the cells are left alone; recorded with the mark.")
@click.option("--by", default=None, help="Who marks (default: the OS user).")
@click.option("--undo", is_flag=True, help="Withdraw the marks (recorded too; the marks' rows stay).")
@json_option
@click.pass_obj
def skip(app: AppContext, asset: str, partition: str | None, first: str | None, last: str | None, reason: str,
         by: str | None, undo: bool, as_json: bool) -> None:
    """Mark cells deliberately skipped: requests leave them alone under --reprocess none and failed
    ("marked skipped by X: why"); --reprocess completed re-runs them. Published data is not touched.

    Example: backfill-assets skip raw_orders --from 2022-10-01 --to 2022-10-07 --reason "source outage: no data"
    """
    cells = override_plan.skip_cells(app.graph(), asset, partition, first, last)
    rows = override_plan.skip(app.catalog(), cells, by or default_user(), reason, undo)
    verb = "withdrew the skip mark of" if undo else "marked skipped"
    action = OverrideAction.UNSKIP if undo else OverrideAction.SKIP
    result = {"action": str(action), "cells": [r.as_dict() for r in rows]}
    emit(result, as_json, lambda: click.echo(
        f"{verb} {len(rows)} cell(s) of {asset}: " + ", ".join(r.partition_key for r in rows)))
