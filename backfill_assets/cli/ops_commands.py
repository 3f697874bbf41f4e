"""Operations after a backfill: handoff decisions, rollback with a cascade, garbage collection."""

from __future__ import annotations

from typing import Any, Callable

import click

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import CellOrigin
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.gc import collect_garbage
from backfill_assets.engine.store.catalog import Catalog, PointerMove
from backfill_assets.engine.store.handoffs import ACCEPTED, DECLINED, Handoffs
from backfill_assets.engine.store.ledger import Ledger

from .app import AppContext, cli, default_user, emit, json_option
from .data_commands import validate_cell


@cli.group()
def handoff() -> None:
    """Downstream owners accept or decline re-running their asset after an upstream backfill."""


@handoff.command("list")
@click.option("--request", "request_id", default=None)
@click.option("--status", default=None, help="open | accepted | declined | expired")
@json_option
@click.pass_obj
def handoff_list(app: AppContext, request_id: str | None, status: str | None, as_json: bool) -> None:
    """List handoffs (owner, asset, partitions, deadline)."""
    rows = Handoffs(app.catalog()).list(request_id, status)
    emit(rows, as_json, lambda: [click.echo(
        f"{h['handoff_id']}  {h['status']:<8}  {h['request_id']}  {h['asset']} → {h['owner']}  "
        f"{len(h['partitions'])} day(s)  deadline {h['deadline']}") for h in rows] or click.echo("no handoffs"))


def _decide(app: AppContext, handoff_id: str, status: str, by: str | None, as_json: bool) -> None:
    catalog = app.catalog()
    decided = Handoffs(catalog).decide(handoff_id, status, by or default_user(), utc_now())
    added = 0
    if status == ACCEPTED:
        cells = [(decided["asset"], p) for p in decided["partitions"]]
        added = Ledger(catalog).add_cells(decided["request_id"], cells, origin=CellOrigin.HANDOFF, reopen=True)
    emit({**decided, "cells_added": added}, as_json,
         f"{handoff_id} {status}" + (f": {added} cell(s) added to {decided['request_id']}" if added else ""))


@handoff.command("accept")
@click.argument("handoff_id")
@click.option("--by", default=None, help="Who accepts (default: the OS user).")
@json_option
@click.pass_obj
def handoff_accept(app: AppContext, handoff_id: str, by: str | None, as_json: bool) -> None:
    """Accept: the driver re-runs this asset's affected partitions under the same request."""
    _decide(app, handoff_id, ACCEPTED, by, as_json)


@handoff.command("decline")
@click.argument("handoff_id")
@click.option("--by", default=None)
@json_option
@click.pass_obj
def handoff_decline(app: AppContext, handoff_id: str, by: str | None, as_json: bool) -> None:
    """Decline: nothing is re-run for this asset; reconcile shows the decision."""
    _decide(app, handoff_id, DECLINED, by, as_json)


def cascade_request_for_consumers(
    app: AppContext, consumers: list, reason: str, kind: str = "rollback", read: str = "the rolled-back version"
) -> str | None:
    """A new request re-running every downstream version that read a version taken off the pointer (``read``: which
    one, as the cells left out say; ``kind``: what took it off — rollback, reject, accept)."""
    cells = sorted({tuple(c.consumer_version_id.split("/")[:2]) for c in consumers if c.consumer_version_id})
    if not cells:
        return None
    graph = app.graph()
    assets = tuple(graph.topological({a for a, _ in cells if a in graph}))
    partitions = tuple(sorted({p for _, p in cells}))
    spec = M.RequestSpec(
        assets=assets,
        partitions=partitions,
        reprocess=M.ReprocessPolicy.COMPLETED,
        max_active=2,
        downstream=M.DownstreamPolicy.CASCADE,
        reason=f"{kind} cascade: {reason}",
        requested_by=default_user(),
        wait_for_overlap=True,
        serial=any(graph[a].depends_on_past for a in assets),
    )
    not_consumers = {
        (a, p): f"did not read {read}" for a in assets for p in partitions if (a, p) not in cells
    }
    return app.service().freeze(spec, {**spec.excluded_cells(graph), **not_consumers}).request_id


@cli.command()
@click.option("--older-than", "older_than", required=True, type=int, help="Days of retention.")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@json_option
@click.pass_obj
def gc(app: AppContext, older_than: int, dry_run: bool, as_json: bool) -> None:
    """Purge files of non-current versions past retention (never a current version or its rollback target).

    Example: backfill-assets gc --older-than 30 --dry-run
    """
    purged = collect_garbage(app.catalog(), app.warehouse(), older_than, utc_now(), dry_run)
    emit({"dry_run": dry_run, "versions": purged}, as_json,
         f"{'would purge' if dry_run else 'purged'} {len(purged)} version(s)" +
         "".join(f"\n  {p['version_id']} ({p['state']})" for p in purged))


def tell_dagster(report: Callable[[Any], str], move: PointerMove, what: str) -> str:
    """Record a pointer move made without a run (``report(instance)``) in the Dagster instance, so the day's
    partition page names the version now serving. The catalog is the truth and has committed: a failure here is
    reported, not raised."""
    import dagster as dg  # only the commands that move a pointer talk to the instance

    try:
        kind = report(dg.DagsterInstance.get())
    except Exception as exc:  # noqa: BLE001 - the move stands whatever Dagster answers
        return f"not recorded ({type(exc).__name__}: {exc}); the catalog's {what} stands"
    return f"recorded a runless {kind} of {move.version_id}"


def tell_dagster_of_rollback(catalog: Catalog, move: PointerMove, reason: str) -> str:
    from backfill_assets.integration.assets.dashboard import report_rollback

    return tell_dagster(lambda instance: report_rollback(instance, catalog, move, reason), move, "rollback")


def echo_consumers(consumers: list[dict], of_what: str, cascade: bool, cascade_request: str | None) -> None:
    """The human lines shared by rollback, reject and accept: who read the version taken away, and the cascade."""
    click.echo(f"{len(consumers)} consumer(s) read {of_what}:")
    for c in consumers:
        click.echo(f"  {c['consumer']}  run={c['consumer_run_id'] or '-'}  request={c['request_id'] or '-'}")
    if cascade:
        click.echo(f"cascade request: {cascade_request or 'none (no downstream version read it)'}")


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
    validate_cell(app, asset, partition)
    catalog = app.catalog()
    move = catalog.rollback(asset, partition, reason, to_version)
    dagster_event = tell_dagster_of_rollback(catalog, move, reason)
    consumers = [c.__dict__ for c in move.consumers_of_previous]
    cascade_request = None
    if cascade:
        cascade_request = cascade_request_for_consumers(app, move.consumers_of_previous, reason)
    result = {
        "asset": asset,
        "partition_key": partition,
        "rolled_back": move.previous_version_id,
        "restored": move.version_id,
        "seq": move.seq,
        "consumers": consumers,
        "cascade_request_id": cascade_request,
        "dagster_event": dagster_event,
    }

    def human() -> None:
        click.echo(f"rolled back {move.previous_version_id}\nrestored    {move.version_id}")
        click.echo(f"Dagster: {dagster_event}")
        echo_consumers(consumers, "the rolled-back version", cascade, cascade_request)

    emit(result, as_json, human)
