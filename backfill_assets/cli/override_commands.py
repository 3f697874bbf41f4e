"""A person overrides what the checks decided, never silently: accept a rejected version, reject a published one,
mark cells skipped (Airflow's "mark success / mark failed / skipped"); or registers a file fixed by hand, which
the checks still decide. Each writes an ``overrides`` row."""

from __future__ import annotations

import sys

import click

from .app import AppContext, cli, default_user, emit, json_option
from .ops_commands import echo_consumers, echo_tables


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
    change = app.service().accept(version_id, approved_by, reason, cascade)

    def human() -> None:
        click.echo(f"accepted {version_id}\nreplaced {change.taken_off or 'nothing'} (publish #{change.seq})")
        click.echo(f"override: {change.override.summary if change.override else '-'}\nDagster: {change.dagster_event}")
        echo_consumers([c.__dict__ for c in change.consumers], "the replaced version", cascade,
                       change.cascade_request_id)
        echo_tables(change.tables)

    emit(change.as_dict(), as_json, human)


@cli.command()
@click.argument("asset")
@click.argument("partition")
@click.option("--path", "path", required=True, help="The Parquet file fixed outside the platform (copied in).")
@click.option("--approved-by", "approved_by", required=True, help="Who checked the file and answers for it.")
@click.option("--reason", required=True, help="What was fixed and why; recorded with the registration.")
@click.option("--cascade", is_flag=True, help="Create a request re-running every consumer of the version replaced.")
@json_option
@click.pass_obj
def register(app: AppContext, asset: str, partition: str, path: str, approved_by: str, reason: str, cascade: bool,
             as_json: bool) -> None:
    """Register a day's data fixed outside the platform ("mark success", made safe): published only if the asset's
    blocking checks pass.

    The file (Parquet) is copied into a version of its own run (register-<time>-<id>, attempt 1, lane manual), in
    its own place in the warehouse, audited by the asset's checks and file integrity, and published by the same
    compare-and-swap as a computed version; versions, rollback, the published tables and Dagster see it as one.
    When a check fails nothing is published, the previous version keeps serving, the version is REJECTED and the
    command exits 1 naming the failed checks. --approved-by must be an approver, as for accept.

    Example: backfill-assets register daily_revenue 2022-10-17 --path fixed.parquet --approved-by ana --reason
    "refunds re-keyed by hand"
    """
    done = app.service().register(asset, partition, path, approved_by, reason, cascade)

    def human() -> None:
        click.echo(done.summary())
        click.echo(f"file {done.source['file_name']} ({done.source['rows']} rows, sha256 {done.sha256[:12]}) "
                   f"-> {done.version_id}")
        for check in done.checks:
            click.echo(f"  {'pass' if check.passed else 'FAIL'}  {check.name}: {check.description}")
        click.echo(f"override: {done.override.summary}\nDagster: {done.dagster_event}")
        if done.published:
            echo_consumers([c.__dict__ for c in done.consumers], "the replaced version", cascade,
                           done.cascade_request_id)
            echo_tables(done.tables)
        else:
            click.echo(f"failed check(s): {', '.join(done.failed_checks) or '-'}; nothing published")

    emit(done.as_dict(), as_json, human)
    if not done.published:
        sys.exit(1)


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
    change = app.service().reject(asset, partition, by or default_user(), reason, cascade)

    def human() -> None:
        click.echo(f"rejected {change.taken_off}\nrestored {change.serving}")
        click.echo(f"override: {change.override.summary if change.override else '-'}\nDagster: {change.dagster_event}")
        echo_consumers([c.__dict__ for c in change.consumers], "the rejected version", cascade,
                       change.cascade_request_id)
        echo_tables(change.tables)

    emit(change.as_dict(), as_json, human)


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
    marks = app.service().skip(asset, by or default_user(), reason, partition, first, last, undo)
    verb = "withdrew the skip mark of" if undo else "marked skipped"
    emit(marks.as_dict(), as_json, lambda: click.echo(
        f"{verb} {len(marks.marks)} cell(s) of {asset}: " + ", ".join(m.partition_key for m in marks.marks)))
