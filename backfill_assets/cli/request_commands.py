"""``backfill-assets request ...``: create (and dry-run), list, show, cancel, confirm, wait."""

from __future__ import annotations

import json
import sys
import time

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.concurrency import Concurrency
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.plan.creation import (
    QueueLimits,
    build_request,
    chunking,
    create_request,
    describe_chunking,
)
from backfill_assets.engine.plan.reconcile import count_decisions, decisions_now
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.store.pauses import Pauses, status_text
from backfill_assets.engine.store.wakeup import wake_daemon

from .app import AppContext, cli, default_user, emit, json_option
from .cell_tries import show_cell_tries
from .instance_config import run_queue_limits


def _instance():
    # Dagster is imported only by the commands that talk to the instance: `request create` and friends start in a
    # fraction of the time (the first run of a request starts that much sooner).
    import dagster as dg

    return dg.DagsterInstance.get()

EXIT_NOT_COMPLETE = 1
EXIT_TIMEOUT = 3


@cli.group()
def request() -> None:
    """Backfill requests: frozen plans that the driver sensor in dagster-daemon carries out."""




def request_options(command):
    """The options of every command that makes a request (``request create``, ``clear``): one definition, so both
    offer and validate the same."""
    options = [
        click.option("--max-active", default=2, show_default=True, type=int,
                     help="Runs of this request executing at once (the run queue may allow fewer: create says)."),
        click.option("--order", default=M.Order.FORWARD.value, show_default=True, help=" | ".join(M.ORDERS)),
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
                          'library\'s keys, e.g. {"inject_defect": {"2022-10-17": {"daily_revenue": "drop_rows"}}}'),
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
@json_option
@click.pass_obj
def create(app: AppContext, dry_run: bool, as_json: bool, **options) -> None:
    """Validate and freeze a backfill request; the driver sensor submits its runs.

    Example: backfill-assets request create --assets daily_revenue --from 2022-10-01 --to 2022-10-31
    --reason "FX fix" --max-active 2   (auto: 2 runs of 16 and 15 days; --partitions-per-run 1: 31 runs)
    """
    make_request(app, options, dry_run, as_json)


def make_request(
    app: AppContext, options: dict, dry_run: bool, as_json: bool, described: dict | None = None,
    heading: str | None = None, hint: str | None = None,
) -> None:
    """Validate ``options`` (``build_spec``'s, by name) and either print the dry run or create the request.
    ``described``: what the caller resolved on the way (``clear``'s selection and days), added to the JSON;
    ``heading`` is printed before the human output, ``hint`` after a dry run's."""
    described = described or {}
    options["requested_by"] = options["requested_by"] or default_user()
    graph = app.graph()
    spec = build_request(graph, **options)
    catalog = app.catalog()
    loaded = code_version(location_files=graph.code_files())
    concurrency = concurrency_of(app, spec)
    stated = {"effective_concurrency": concurrency.effective, "concurrency_note": concurrency.note, **described}
    if dry_run:
        from backfill_assets.integration.request_planning import dry_run as plan_cells

        plan = plan_cells(graph, catalog, _instance(), spec)
        chunks = chunking(graph, spec, plan)
        emit(
            {"dry_run": True, "code_version": loaded, "max_active": spec.effective_max_active, "cells": plan,
             **chunks, **stated},
            as_json,
            lambda: _print_plan(spec, plan, concurrency, chunks, heading, hint),
        )
        return
    record = create_request(graph, catalog, spec, loaded, M.RequestSource.CLI)
    wake_daemon(app.home)
    emit(
        record.as_dict() | stated,
        as_json,
        (f"{heading}\n" if heading else "")
        + f"created {record.request_id} ({record.status}): {len(spec.assets)} asset(s) × {len(spec.partitions)} "
        f"day(s), code version {loaded}, at most {concurrency.effective} run(s) at once, up to "
        f"{spec.partitions_per_run} day(s) per run ({spec.partitions_per_run_mode})"
        + (f"\n  {concurrency.note}" if concurrency.note else "")
        + (f"\n  {record.row['message']}" if record.row["message"] else ""),
    )


def concurrency_of(app: AppContext, spec: M.RequestSpec) -> Concurrency:
    """What the run queue lets this request execute at once (its max_active, or less, and why)."""
    max_runs, limits = run_queue_limits(app.home)
    return QueueLimits(max_runs, limits, f"{app.home}/dagster.yaml").concurrency(spec)


def _print_plan(
    spec: M.RequestSpec, plan: list[dict], concurrency: Concurrency, chunks: dict, heading: str | None = None,
    hint: str | None = None,
) -> None:
    if heading:
        click.echo(heading)
    table = Table(
        title=f"dry run: {len(plan)} cell(s), order {spec.order}, max_active {spec.effective_max_active}, "
        f"at most {concurrency.effective} run(s) at once"
    )
    for col in ("partition", "asset", "decision"):
        table.add_column(col)
    for row in plan:
        table.add_row(row["partition_key"], row["asset"], f"{row['action']}: {row['reason']}")
    Console().print(table)
    for line in describe_chunking(chunks):
        click.echo(line)
    if concurrency.note:
        click.echo(concurrency.note)
    click.echo("dry run: nothing was written" + (f"; {hint}" if hint else ""))


@request.command("list")
@json_option
@click.pass_obj
def list_requests(app: AppContext, as_json: bool) -> None:
    """List requests, newest first, with their progress."""
    catalog = app.catalog()
    ledger = Ledger(catalog)
    rows = []
    paused = Pauses(catalog).current()
    for record in ledger.list():
        cells = decisions_now(catalog, record.request_id, ledger.cells(record.request_id))
        rows.append({**record.as_dict(), "pause": paused.get(record.request_id),
                     "counts": count_decisions(c.decision for c in cells)})

    def human() -> None:
        table = Table()
        for col in ("request", "status", "source", "assets", "days", "published", "rejected", "skipped", "in flight"):
            table.add_column(col)
        for r in rows:
            c = r["counts"]
            table.add_row(
                r["request_id"], status_text(r["status"], r["pause"]), r["source"], ",".join(r["assets"]),
                str(len(r["partitions"])),
                str(c["published"]), str(c["rejected"] + c["failed"]), str(c["skipped"]), str(c["submitted"]),
            )
        Console().print(table)

    emit(rows, as_json, human)


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
    catalog = app.catalog()
    ledger = Ledger(catalog)
    record = ledger.get(validate_request_id(request_id))
    if cell is not None:
        show_cell_tries(app, request_id, cell, as_json)
        return
    cells = [c.as_dict() for c in decisions_now(catalog, request_id, ledger.cells(request_id))]
    pauses = Pauses(catalog)
    data = {**record.as_dict(), "pause": pauses.current([request_id]).get(request_id),
            "pauses": pauses.history(request_id), "counts": count_decisions(c["decision"] for c in cells),
            "cells": cells}

    def human() -> None:
        r = data
        click.echo(f"{r['request_id']}  {r['status']}  ({r['source']})  {r['message'] or ''}")
        click.echo(f"  requested by {r['requested_by']} at {r['requested_at']}: {r['reason'] or '-'}")
        click.echo(
            f"  assets {','.join(r['assets'])}  {r['partitions'][0]}..{r['partitions'][-1]}  reprocess={r['reprocess']}"
            + (" (only failed)" if r.get("only_failed") else "") +
            f"  order={r['order']}  max_active={r['max_active']}  downstream={r['downstream']}"
            f"  code {r['code_version']}"
        )
        click.echo(
            f"  partitions_per_run={r['partitions_per_run']} ({r.get('partitions_per_run_mode') or M.EXPLICIT})"
        )
        if r["conf"]:
            click.echo(f"  conf {json.dumps(r['conf'], sort_keys=True)}")
        click.echo("  " + ", ".join(f"{k} {v}" for k, v in r["counts"].items()))
        table = Table()
        for col in ("partition", "asset", "decision", "reason", "run"):
            table.add_column(col)
        for c in cells:
            run = (c["dagster_run_id"] or "")[:8]
            table.add_row(c["partition_key"], c["asset"], c["decision"], c["reason"] or "", run)
        Console().print(table)

    emit(data, as_json, human)


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
    from backfill_assets.integration.runs.cancel import close_request, terminate_request_runs
    from backfill_assets.integration.runs.dagster_adapter import cancel_backfill

    ledger = Ledger(app.catalog())
    record = ledger.get(validate_request_id(request_id))
    instance = _instance()
    dagster_backfill = None
    if record.source == M.RequestSource.DAGSTER:
        # Adopted: Dagster's backfill daemon launches its runs, so the backfill itself is cancelled first.
        dagster_backfill = cancel_backfill(instance, request_id.removeprefix(T.ADOPTED_PREFIX))
    submitted, already = close_request(ledger, request_id)
    bounds = {} if terminate_timeout is None else {"terminate_timeout": terminate_timeout}
    side_effects = frozenset(app.graph().side_effect_assets)
    outcome = terminate_request_runs(
        instance, app.catalog(), request_id, submitted, side_effects=side_effects, **bounds
    )
    payload = {
        "request_id": request_id,
        "status": M.CANCELLED,
        "already_cancelled": already,
        "terminated_runs": outcome.terminated,
        "forced_runs": outcome.forced,
    }
    if record.source == M.RequestSource.DAGSTER:
        # Read again once its runs are stopped: the backfill daemon's iteration that sees them cancelled may have
        # completed the backfill over our CANCELING (Dagster's completion does not check for a pending cancel);
        # a backfill still active is asked again. Either way it launches nothing more.
        payload["dagster_backfill_status"] = cancel_backfill(
            instance, request_id.removeprefix(T.ADOPTED_PREFIX)
        ) or dagster_backfill
    verb = "already cancelled" if already else "cancelled"
    human = f"{verb} {request_id}; terminated {len(outcome.terminated)} run(s)"
    if outcome.forced:
        human += (
            f"\nforced {len(outcome.forced)} run(s) whose code server did not answer: {', '.join(outcome.forced)} "
            "(marked cancelled in Dagster; they cannot publish)"
        )
    emit(payload, as_json, human)


@request.command("confirm")
@click.argument("request_id")
@json_option
@click.pass_obj
def confirm(app: AppContext, request_id: str, as_json: bool) -> None:
    """Confirm a request created with --confirm-cascade, so its downstream cascade may launch."""
    ledger = Ledger(app.catalog())
    record = ledger.get(validate_request_id(request_id))
    if record.status in M.CLOSED_STATUSES:
        raise InvalidInput(f"request {request_id} is {record.status}")
    ledger.confirm(request_id)
    wake_daemon(app.home)
    emit({"request_id": request_id, "confirmed": True}, as_json, f"confirmed {request_id}")


@request.command("wait")
@click.argument("request_id")
@click.option("--timeout", default=3600.0, show_default=True, type=float, help="Seconds before giving up.")
@json_option
@click.pass_obj
def wait(app: AppContext, request_id: str, timeout: float, as_json: bool) -> None:
    """Wait with a progress bar; exit 0 only if every cell was published or deliberately skipped.

    Exit 1: finished (or blocked/cancelled) with rejected, failed or cancelled cells. Exit 3: timed out.
    """
    ledger = Ledger(app.catalog())
    ledger.get(validate_request_id(request_id))
    record, counts, summary = watch(ledger, request_id, timeout, show_progress=not as_json)
    ok = is_complete(record.status, counts)
    timed_out = record.status not in (*M.CLOSED_STATUSES, M.BLOCKED)
    result = {"request_id": request_id, "status": record.status, "message": record.row["message"],
              "counts": counts, "complete": ok, "timed_out": timed_out}
    emit(result, as_json, f"{request_id}: {record.status} — {summary}" + (
        f"\n  {record.row['message']}" if record.row["message"] else ""))
    if not ok:
        sys.exit(EXIT_TIMEOUT if timed_out else EXIT_NOT_COMPLETE)


def is_complete(status: str, counts: dict[str, int]) -> bool:
    """Complete: closed normally with every planned cell published or deliberately skipped."""
    return status == M.COMPLETED and counts["published"] + counts["skipped"] == counts["planned"]


def summarize(status: str, counts: dict[str, int]) -> str:
    return (
        f"planned {counts['planned']} | published {counts['published']} | rejected "
        f"{counts['rejected'] + counts['failed']} | skipped {counts['skipped']} | in flight "
        f"{counts['submitted']} | {status}"
    )


def watch(ledger: Ledger, request_id: str, timeout: float, show_progress: bool = True):
    """Poll the ledger with a live progress bar until the request closes, blocks, or the timeout passes."""
    deadline = time.monotonic() + timeout
    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.fields[request]}"),
        BarColumn(),
        TextColumn("{task.fields[summary]}"),
        TimeElapsedColumn(),
        console=console,
        disable=not show_progress,
    ) as progress:
        task = progress.add_task("wait", total=1, request=request_id, summary="")
        while True:
            record = ledger.get(request_id)
            counts = ledger.counts(request_id)
            done = sum(counts[d] for d in M.TERMINAL_CELLS)
            summary = summarize(record.status, counts)
            progress.update(task, total=counts["planned"], completed=done, summary=summary)
            if record.status in (*M.CLOSED_STATUSES, M.BLOCKED) or time.monotonic() > deadline:
                return record, counts, summary
            time.sleep(1.0)
