"""Operations after a backfill: handoff decisions, rollback with a cascade, garbage collection."""

from __future__ import annotations

import click

from backfill_assets.service.vocabulary import ACCEPTED, DECLINED

from .app import AppContext, cli, default_user, emit, json_option


@cli.group()
def handoff() -> None:
    """Downstream owners accept or decline re-running their asset after an upstream backfill."""


@handoff.command("list")
@click.option("--request", "request_id", default=None, help="Only this request's handoffs.")
@click.option("--status", default=None,
              help="Only handoffs in this status: open | accepted | declined | expired (another word is refused).")
@json_option
@click.pass_obj
def handoff_list(app: AppContext, request_id: str | None, status: str | None, as_json: bool) -> None:
    """List handoffs (owner, asset, partitions, deadline)."""
    found = app.service().handoffs(request_id, status)

    def human() -> None:
        for h in found:
            click.echo(f"{h.handoff_id}  {h.status:<8}  {h.request_id}  {h.asset} → {h.owner}  "
                       f"{len(h.partitions)} day(s)  deadline {h.deadline}")
        if not found:
            click.echo("no handoffs")

    emit([h.as_dict() for h in found], as_json, human)


def _decide(app: AppContext, handoff_id: str, status: str, by: str | None, as_json: bool) -> None:
    backfills = app.service()
    decide = backfills.accept_handoff if status == ACCEPTED else backfills.decline_handoff
    decision = decide(handoff_id, by or default_user())
    added, request_id = decision.cells_added, decision.handoff.request_id
    emit(decision.as_dict(), as_json, f"{handoff_id} {status}" + (f": {added} cell(s) added to {request_id}"
                                                                  if added else ""))


@handoff.command("accept")
@click.argument("handoff_id")
@click.option("--by", default=None, help="Who accepts: one of the asset's owners or an admin (default: the OS user).")
@json_option
@click.pass_obj
def handoff_accept(app: AppContext, handoff_id: str, by: str | None, as_json: bool) -> None:
    """Accept: the driver re-runs this asset's affected partitions under the same request."""
    _decide(app, handoff_id, ACCEPTED, by, as_json)


@handoff.command("decline")
@click.argument("handoff_id")
@click.option("--by", default=None, help="Who declines: one of the asset's owners or an admin (default: the OS user).")
@json_option
@click.pass_obj
def handoff_decline(app: AppContext, handoff_id: str, by: str | None, as_json: bool) -> None:
    """Decline: nothing is re-run for this asset; reconcile shows the decision."""
    _decide(app, handoff_id, DECLINED, by, as_json)


@cli.command()
@click.option("--older-than", "older_than", default=None, type=int,
              help="Days of retention (default: the code location's CleanupPolicy, 30 days unless set).")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@json_option
@click.pass_obj
def gc(app: AppContext, older_than: int | None, dry_run: bool, as_json: bool) -> None:
    """Purge files of non-current versions past retention (never a current version or its rollback target).

    The backfill_cleanup sensor (shipped stopped) does the same on a timer with the code location's retention.

    Example: backfill-assets gc --older-than 30 --dry-run
    """
    purged = app.service().gc(older_than, dry_run)
    emit([p.as_dict() for p in purged], as_json,
         f"{'would purge' if dry_run else 'purged'} {len(purged)} version(s)" +
         "".join(f"\n  {p.version_id} ({p.state})" for p in purged))


def echo_tables(report) -> None:
    """What the published tables did after a pointer moved: switched, or (named) left behind until the next sync."""
    for result in report.synced:
        if result.days:
            click.echo(f"published table {result.table}: switched ({', '.join(result.days)})")
    for table, why in report.failed:
        click.echo(f"published table {table}: not switched yet ({why}); `backfill-assets tables sync` retries")


def echo_consumers(consumers: list[dict], of_what: str, cascade: bool, cascade_request: str | None) -> None:
    """The human lines shared by rollback, reject and accept: who read the version taken away, and the cascade."""
    if not consumers:
        click.echo(f"No consumer (a downstream version or an external reader) read {of_what}.")
    else:
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
@click.option("--by", default=None, help="Who rolls back: an approver, as for reject (default: the OS user).")
@json_option
@click.pass_obj
def rollback(
    app: AppContext, asset: str, partition: str, to_version: str | None, reason: str, cascade: bool,
    by: str | None, as_json: bool,
) -> None:
    """Move the current pointer back to a verified version and list everyone who read the bad one.

    Needs an approver (the code location's AccessPolicy), as reject does; a version whose file does not verify
    is never restored.

    Example: backfill-assets rollback daily_revenue 2022-10-17 --reason "wrong FX rates" --by ana
    """
    change = app.service().rollback(asset, partition, reason, to_version, cascade, by)

    def human() -> None:
        click.echo(f"rolled back {change.taken_off}\nrestored    {change.serving}")
        click.echo(f"Dagster: {change.dagster_event}")
        echo_tables(change.tables)
        echo_consumers([c.__dict__ for c in change.consumers], "the rolled-back version", cascade,
                       change.cascade_request_id)

    emit(change.as_dict(), as_json, human)
