"""``backfill-assets request ...``: create (and dry-run), list, show, cancel, confirm, wait."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as ProgressBar

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.request_input import RequestInput, parse_asset_list, parse_conf_text
from backfill_assets.service import Backfills, CreatedRequest, Progress, RequestDetail, RequestPlan
from backfill_assets.service.records import HEADLINE_COUNTS, headline_counts
from backfill_assets.service.vocabulary import status_text

from .app import AppContext, cli, default_user, emit, json_option
from .cell_tries import show_cell_tries
from .table_output import print_table

EXIT_NOT_COMPLETE = 1
EXIT_TIMEOUT = 3


@cli.group()
def request() -> None:
    """Backfill requests: frozen plans that the driver sensor in dagster-daemon carries out."""




def request_options(command):
    """The options of every command that makes a request (``request create``, ``clear``): one definition, so both
    offer and validate the same."""
    options = [
        click.option("--max-active", default=None, type=int,
                     help="Runs of this request executing at once, up to the run queue's lane and team limits (create, "
                          "the dry run and show name the one that binds). "
                          "Default: 1 when an asset runs its days one at a time (parallel_days=False or depends on "
                          "the past; more is refused), else 2."),
        click.option("--order", default=None, help=" | ".join(M.ORDERS) + ". Default: the order the assets "
                     "declare (a contradicting one is refused), else forward."),
        click.option("--partitions-per-run", default=M.AUTO, show_default=True, metavar="auto|K",
                     help="The most consecutive days of an asset one run takes (1 to "
                          f"{M.MAX_PARTITIONS_PER_RUN}; a depends-on-past asset's days run in order, one run at a "
                          "time); auto: every day with a depends-on-past asset (its chain in as few runs as "
                          f"possible), 1 with at most {M.AUTO_MIN_INTERVALS_PER_SLOT} days per --max-active slot, "
                          "else enough to fill every slot."),
        click.option("--downstream", default=M.DownstreamPolicy.NONE.value, show_default=True,
                     help=" | ".join(M.DOWNSTREAM_POLICIES)),
        click.option("--confirm-cascade", is_flag=True, help="Cascade only after `request confirm ID`."),
        click.option("--allow-side-effects", default=None, help="Side-effecting assets this request may run."),
        click.option("--approved-by", default=None, help="Who approved the side effects."),
        click.option("--conf", default=None,
                     help='JSON: an asset\'s own config, e.g. {"order_facts": {"usd_to_cny": 7.3}}, and the '
                          'library\'s key, {"handoff_window_seconds": 3600}'),
        click.option("--reason", default="", help="Why this backfill exists."),
        click.option("--requested-by", default=None, help="Who asks (default: the OS user)."),
        click.option("--wait-for-overlap", is_flag=True, help="Wait for overlapping requests instead of failing."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@request.command("create")
@click.option("--assets", required=True, help="Comma-separated asset names.")
@click.option("--from", "first", required=True, help="First business day, YYYY-MM-DD.")
@click.option("--to", "last", required=True, help="Last business day, inclusive.")
@click.option("--reprocess", default=M.ReprocessPolicy.FAILED.value, show_default=True,
              help=" | ".join(M.REPROCESS_POLICIES))
@request_options
@click.option("--dry-run", is_flag=True, help="Print each cell's decision now; write nothing.")
@click.option("--wait", "wait_seconds", is_flag=False, flag_value=3600.0, default=None, type=float, metavar="[SECONDS]",
              help="Then wait as `request wait` does (default 3600 s), with its exit status.")
@json_option
@click.pass_obj
def create(app: AppContext, dry_run: bool, wait_seconds: float | None, as_json: bool, **options) -> None:
    """Validate and freeze a backfill request and queue its first runs; the driver sensor submits the rest.

    Example: backfill-assets request create --assets daily_revenue --from 2022-10-01 --to 2022-10-31
    --reason "FX fix" --max-active 2   (auto: 2 runs of 16 and 15 days; --partitions-per-run 1: 31 runs)
    """
    asked = request_input(options)
    if dry_run:
        planning = app.asking_service(conf_given=bool(asked.conf))
        show_outcome(planning.plan(asked), None, as_json)
        app.remember_location(planning)
        return
    backfills = app.creating_service(conf_given=bool(asked.conf))
    created = backfills.create(asked)
    app.remember_location(backfills)
    if wait_seconds is None or not as_json:  # with --wait --json, one object: the wait's, holding the request
        show_outcome(None, created, as_json)
    if wait_seconds is not None:
        wait_for(backfills, created.request.request_id, wait_seconds, as_json,
                 {"created": created.as_dict()} if as_json else None)


def request_input(options: dict[str, Any]) -> RequestInput:
    """The flags of ``request create`` (and ``clear``) as the service's input: lists split, conf parsed."""
    options = dict(options)
    return RequestInput(
        assets=parse_asset_list(options.pop("assets")), from_day=options.pop("first"), to_day=options.pop("last"),
        allow_side_effects=parse_asset_list(options.pop("allow_side_effects")),
        conf=parse_conf_text(options.pop("conf")), requested_by=options.pop("requested_by") or default_user(),
        **options,
    )


def show_outcome(
    plan: RequestPlan | None, created: CreatedRequest | None, as_json: bool, payload: dict | None = None,
    heading: str | None = None, hint: str | None = None,
) -> None:
    """Print a dry run (``plan``) or a request just created. ``payload``: the JSON to print instead of the
    outcome's own (``clear`` adds its selection and days); ``heading`` is printed before the human output,
    ``hint`` after a dry run's."""
    if created is None:
        if plan is None:
            raise TypeError("show_outcome needs the dry run's plan or the request created")
        dry_run = plan
        emit(payload or dry_run.as_dict(), as_json, lambda: _print_plan(dry_run, heading, hint))
        return
    request, concurrency = created.request, created.concurrency
    spec = request.spec
    emit(
        payload or created.as_dict(),
        as_json,
        (f"{heading}\n" if heading else "")
        + f"created {request.request_id} ({request.status}): {len(spec.assets)} asset(s) × {len(spec.partitions)} "
        f"day(s), code version {request.code_version}, at most {concurrency.effective} run(s) at once, up to "
        f"{spec.partitions_per_run} day(s) per run ({spec.partitions_per_run_text})"
        + (f"\n  {concurrency.note}" if concurrency.note else "")
        + (f"\n  {request.message}" if request.message else ""),
    )


def _print_plan(plan: RequestPlan, heading: str | None = None, hint: str | None = None) -> None:
    if heading:
        click.echo(heading)
    spec = plan.spec
    title = (f"dry run: {len(plan.cells)} cell(s), order {spec.order}, max_active {spec.effective_max_active}, "
             f"at most {plan.concurrency.effective} run(s) at once")
    rows = [(cell.partition_key, cell.asset, f"{cell.action}: {cell.reason}") for cell in plan.cells]
    print_table(("partition", "asset", "decision"), rows, title)
    for line in plan.notes()[1:]:  # the first, runs at once, is the table's title
        click.echo(line)
    click.echo("dry run: nothing was written" + (f"; {hint}" if hint else ""))


@request.command("list")
@click.option("--status", "statuses", multiple=True, metavar="STATUS",
              help="Only requests in this status (repeatable): waiting, open, blocked, paused, completed, failed, "
                   "cancelled, or active (not closed) / closed.")
@json_option
@click.pass_obj
def list_requests(app: AppContext, statuses: tuple[str, ...], as_json: bool) -> None:
    """List requests, newest first, with their progress. A request closes completed when every day it planned is
    published or deliberately skipped, failed when one was rejected, failed or left unpublished.

    Example: backfill-assets request list --status failed --json
    """
    summaries = app.reading_service().list(statuses)

    def human() -> None:
        counted = [name for name in HEADLINE_COUNTS if name != "planned"]
        rows = []
        for s in summaries:
            r, c = s.request, headline_counts(s.counts)
            rows.append((
                r.request_id, status_text(r.status, s.pause), r.source, ",".join(r.spec.assets),
                str(len(r.spec.partitions)), *(str(c[name]) for name in counted),
            ))
        print_table(("request", "status", "source", "assets", "days", *counted), rows)

    emit([s.as_dict() for s in summaries], as_json, human)


@request.command("show")
@click.argument("request_id")
@click.option("--cell", default=None, metavar="ASSET/PARTITION",
              help="List every try of this cell, across all requests and production, instead.")
@json_option
@click.pass_obj
def show(app: AppContext, request_id: str, cell: str | None, as_json: bool) -> None:
    """Show a request, its counts and every cell's decision (a published cell whose version was since rolled back
    shows as rolled_back); with --cell, every try of one cell (Airflow's task tries), this request's marked.

    Example: backfill-assets request show req-20221101-1a2b3c4d --cell daily_revenue/2022-10-17
    """
    if cell is not None:
        show_cell_tries(app, request_id, cell, as_json)
        return
    backfills = app.reading_service()
    detail = backfills.show(request_id)
    emit(detail.as_dict(), as_json, lambda: _print_detail(detail))
    app.remember_location(backfills)  # a show that had to load the code location: the next one reads its snapshot


def _print_detail(detail: RequestDetail) -> None:
    r, spec = detail.request, detail.request.spec
    click.echo(f"{r.request_id}  {r.status}  ({r.source})  {r.message or ''}")
    click.echo(f"  requested by {spec.requested_by} at {r.requested_at}: {spec.reason or '-'}")
    click.echo(
        f"  assets {','.join(spec.assets)}  {spec.partitions[0]}..{spec.partitions[-1]}  reprocess={spec.reprocess}"
        + (" (only failed)" if spec.only_failed else "")
        + f"  order={spec.order}  max_active={spec.max_active}  downstream={spec.downstream}"
        f"  code {r.code_version}"
    )
    click.echo(f"  partitions_per_run={spec.partitions_per_run} ({spec.partitions_per_run_text})")
    concurrency = detail.concurrency
    if concurrency is not None and r.status not in M.CLOSED_STATUSES:
        click.echo(f"  {concurrency.note or f'at most {concurrency.effective} run(s) at once'}")
    if spec.conf:
        click.echo(f"  conf {json.dumps(spec.conf, sort_keys=True)}")
    click.echo("  " + ", ".join(f"{k} {v}" for k, v in headline_counts(detail.counts).items()))
    rows = [(c.partition_key, c.asset, c.decision, c.reason or "", c.dagster_run_id or "") for c in detail.cells]
    print_table(("partition", "asset", "decision", "reason", "run"), rows)
    for op in detail.operations:
        why = f": {op.reason}" if op.reason else ""
        click.echo(f"  {op.at}  {op.operation} by {op.actor} from {op.surface}{why} → {op.outcome}")


@request.command("cancel")
@click.argument("request_id")
@click.option("--terminate-timeout", type=click.FloatRange(min=0.1), default=None, metavar="SECONDS",
              help="How long a run's code server gets to answer the termination request before the run is "
                   "marked cancelled without it (default: 5).")
@json_option
@click.pass_obj
def cancel(app: AppContext, request_id: str, terminate_timeout: float | None, as_json: bool) -> None:
    """Stop submitting and terminate the request's queued and running runs.

    Safe to repeat: cancelling a cancelled request (or one whose cancel died half-way) stops what is left."""
    outcome = app.service().cancel(request_id, terminate_timeout)
    verb = "already cancelled" if outcome.already_cancelled else "cancelled"
    human = f"{verb} {request_id}; terminated {len(outcome.terminated_runs)} run(s)"
    if outcome.forced_runs:
        human += (
            f"\nforced {len(outcome.forced_runs)} run(s) whose code server did not answer: "
            f"{', '.join(outcome.forced_runs)} (marked cancelled in Dagster; they cannot publish)"
        )
    emit(outcome.as_dict(), as_json, human)


@request.command("confirm")
@click.argument("request_id")
@json_option
@click.pass_obj
def confirm(app: AppContext, request_id: str, as_json: bool) -> None:
    """Confirm a request created with --confirm-cascade, so its downstream cascade may launch."""
    confirmed = app.service().confirm(request_id)
    emit(confirmed.as_dict(), as_json, f"confirmed {request_id}")


@request.command("wait")
@click.argument("request_id")
@click.option("--timeout", default=3600.0, show_default=True, type=float, help="Seconds before giving up.")
@json_option
@click.pass_obj
def wait(app: AppContext, request_id: str, timeout: float, as_json: bool) -> None:
    """Wait with a progress bar; exit 0 only if every cell was published or deliberately skipped.

    Exit 1: finished (or blocked/cancelled) with rejected, failed or cancelled cells. Exit 3: timed out.
    """
    backfills = app.service()
    backfills.progress(request_id)  # an unknown or malformed id is one error line, before any progress bar
    wait_for(backfills, request_id, timeout, as_json)


def wait_for(backfills: Backfills, request_id: str, timeout: float, as_json: bool, extra: dict | None = None) -> None:
    """Watch the request until it closes, blocks or times out; print how it ended; exit 1 or 3 unless complete."""
    now = watch(backfills, request_id, timeout, show_progress=not as_json)
    timed_out = not now.waiting_on_nothing
    result = {"request_id": request_id, "status": now.status, "message": now.message, "counts": dict(now.counts),
              "complete": now.complete, "timed_out": timed_out, **(extra or {})}
    emit(result, as_json, f"{request_id}: {now.status} — {now.summary()}" + (
        f"\n  {now.message}" if now.message else ""))
    if not now.complete:
        sys.exit(EXIT_TIMEOUT if timed_out else EXIT_NOT_COMPLETE)


def watch(backfills: Backfills, request_id: str, timeout: float, show_progress: bool = True) -> Progress:
    """Poll the request with a live progress bar until it closes, blocks, or the timeout passes."""
    deadline = time.monotonic() + timeout
    console = Console(stderr=True)
    with ProgressBar(
        TextColumn("{task.fields[request]}"),
        BarColumn(),
        TextColumn("{task.fields[summary]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show_progress,
    ) as bar:
        task = bar.add_task("wait", total=1, request=request_id, summary="")
        while True:
            now = backfills.progress(request_id)
            done = sum(now.counts[d] for d in M.TERMINAL_CELLS)
            bar.update(task, total=now.counts["planned"], completed=done, summary=now.summary())
            if now.waiting_on_nothing or time.monotonic() > deadline:
                return now
            time.sleep(1.0)
