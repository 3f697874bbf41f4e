"""``backfill-assets demo``: the October story (README.md#what-the-demo-does), end to end on the embedded default."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from datetime import date, timedelta

import click

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.request_input import RequestInput
from backfill_assets.engine.model.settings import ENV_CODE_VERSION, code_version
from backfill_assets.engine.model.states import VersionState
from backfill_assets.examples.orders import CELERY_MODULE as ORDERS_CELERY_MODULE
from backfill_assets.examples.orders import MODULE as ORDERS_MODULE
from backfill_assets.examples.orders.domain import DAILY_REVENUE, DEMO_CALENDAR
from backfill_assets.service import Backfills
from backfill_assets.service.vocabulary import Version

from .app import AppContext, cli, emit, json_option
from .daemon import running_daemon
from .demo_readers import ReadersCompared, compare_readers
from .request_commands import watch


def _instance():
    # Dagster is imported only by the commands that talk to the instance: `request create` and friends start in a
    # fraction of the time (the first run of a request starts that much sooner).
    import dagster as dg

    return dg.DagsterInstance.get()

SEED_FROM, SEED_TO = "2022-09-01", "2022-11-30"
BACKFILL_FROM, BACKFILL_TO = "2022-10-01", "2022-10-31"
DEFECT_DAY = "2022-10-17"
ROLLBACK_DAY = "2022-10-02"
REVENUE_COLUMN = "revenue_cny"  # daily_revenue's measure, summed by each reader of step 6
# Where the backfill's steps run: the orders code location in-process, or its variant on Celery workers.
EXECUTOR_MODULES = {"in_process": ORDERS_MODULE, "celery": ORDERS_CELERY_MODULE}


@cli.command()
@click.option("--orders-per-day", default=500, show_default=True, type=int)
@click.option("--max-active", default=2, show_default=True, type=int)
@click.option("--timeout", default=900.0, show_default=True, type=float, help="Seconds to wait for the backfill.")
@click.option(
    "--executor",
    type=click.Choice(sorted(EXECUTOR_MODULES)),
    default="in_process",
    show_default=True,
    help="Where the backfill's steps run: in each run's process, or on Celery workers that are already running "
    "(deploy/celery; `make demo-distributed` starts them).",
)
@json_option
@click.pass_obj
def demo(
    app: AppContext, orders_per_day: int, max_active: int, timeout: float, executor: str, as_json: bool
) -> None:
    """The orders example: seed Sep–Nov 2022, run production, backfill October through the driver with one
    defective day (always the orders code location, whatever -m names).

    Example: backfill-assets demo
    """
    say = (lambda msg: None) if as_json else click.echo
    started = time.monotonic()
    app.module = EXECUTOR_MODULES[executor]
    location = app.code_location()
    backfills = app.service()
    _seed_and_run_production(location, backfills, orders_per_day, say)
    before = backfills.serving(DAILY_REVENUE, DEFECT_DAY)
    request_id = _create_request(backfills, max_active, say)
    say("4. started backfill-assets-daemon; the backfill_driver sensor submits the runs")
    with running_daemon(app.home, app.module):
        now = watch(backfills, request_id, timeout, show_progress=not as_json)
    say("   backfill-assets-daemon stopped")
    workers = days_by_worker(backfills.request_versions(request_id))
    say(f"   which worker ran which day ({executor}):")
    for worker, days in workers.items():
        say(f"     {worker}: {len(days)} day(s): {', '.join(day_ranges(days))}")

    serving = backfills.serving(DAILY_REVENUE, DEFECT_DAY)
    defect = defect_day_outcome(backfills.versions(DAILY_REVENUE, DEFECT_DAY), request_id, before, serving)
    rolled = None
    if backfills.rollback_target(DAILY_REVENUE, ROLLBACK_DAY) is not None:
        reason = "demo: show a rollback to the production version"
        rolled = backfills.rollback(DAILY_REVENUE, ROLLBACK_DAY, reason)
    readers = compare_readers(app.settings(), backfills, DAILY_REVENUE, REVENUE_COLUMN, BACKFILL_FROM, BACKFILL_TO)
    cells = backfills.show(request_id).cells
    rejected_days = [c.partition_key for c in cells if c.decision in (M.REJECTED, M.FAILED)]
    summary_data = {
        "request_id": request_id,
        "status": now.status,
        "counts": dict(now.counts),
        "complete": now.complete,
        "rejected_days": rejected_days,
        "defect_day": defect,
        "defect_day_serving": serving.version_id if serving else None,
        "defect_day_old_version_kept": defect["old_version_kept"],
        "rollback": None
        if rolled is None
        else {"day": ROLLBACK_DAY, "restored": rolled.serving, "rolled_back": rolled.taken_off},
        "executor": executor,
        "days_by_worker": workers,
        "readers": readers.as_dict() if readers else None,
        "seconds": round(time.monotonic() - started, 1),
        "dagster_home": str(app.home),
    }
    emit(summary_data, as_json, lambda: _echo_summary(summary_data, now, rolled, readers, app))


def _seed_and_run_production(location, backfills: Backfills, orders_per_day: int, say) -> None:
    """Steps 1 and 2: the source seeded, and every day production has not published yet run in order."""
    from backfill_assets.integration.runs.local_runs import run_partitions

    location.module.seed(SEED_FROM, SEED_TO, orders_per_day)
    say(f"1. seeded the source system {SEED_FROM}..{SEED_TO} ({orders_per_day} orders/day, UTC timestamps)")
    days = DEMO_CALENDAR.keys_between(SEED_FROM, SEED_TO)
    todo = [k for k in days if backfills.serving(DAILY_REVENUE, k) is None]
    say(f"2. production: {len(todo)} day(s) to run, one Dagster run per day, in order (lane=production)")
    # Data assets only: an alert about a past day is a backfill's, with an approver (production delivers the
    # newest day's alone), and the demo replays production's history.
    defs = location.module.defs
    data_assets = list(backfills.graph.data_assets)  # the service's graph is the location's
    production = run_partitions(_instance(), todo, defs=defs, assets=data_assets)
    failed = [r for r in production if not r.success]
    if failed:
        raise click.ClickException(f"production failed on {failed[0].partition_key}: {failed[0].failure}")


def _create_request(backfills: Backfills, max_active: int, say) -> str:
    """Step 3: the October backfill with its defective day, under a pinned code version; returns its id."""
    # Pin the code version for the daemon we start, so an unrelated edit in a dev checkout during the demo
    # does not block the request (outside the demo, that block is exactly the point).
    os.environ[ENV_CODE_VERSION] = code_version()
    from backfill_assets.defects import Defect, defect_conf  # imports Dagster: only when the demo runs

    created = backfills.create(RequestInput(
        assets=[DAILY_REVENUE], from_day=BACKFILL_FROM, to_day=BACKFILL_TO, reprocess=M.ReprocessPolicy.COMPLETED,
        max_active=max_active, conf={DAILY_REVENUE: defect_conf({DEFECT_DAY: Defect.drop_rows})},
        reason="demo: recompute October after the revenue rounding fix", requested_by="demo", wait_for_overlap=True,
    ))
    spec = created.request.spec
    say(
        f"3. created {created.request.request_id}: {DAILY_REVENUE} {BACKFILL_FROM}..{BACKFILL_TO}, "
        f"reprocess=completed, max_active={max_active}, a defect on {DEFECT_DAY} given as {DAILY_REVENUE}'s conf; "
        f"up to {spec.partitions_per_run} day(s) per run ({spec.partitions_per_run_text})"
    )
    return created.request.request_id


def _echo_summary(summary: dict, now, rolled, readers: ReadersCompared | None, app: AppContext) -> None:
    request_id, counts = summary["request_id"], summary["counts"]
    click.echo(f"\n{request_id}: {counts['published']} published, {counts['rejected'] + counts['failed']} rejected")
    for line in describe_defect_day(summary["defect_day"]):
        click.echo(f"  {line}")
    if now.status != M.COMPLETED:
        click.echo(f"  request ended {now.status}: {now.message}")
    if rolled is not None:
        click.echo(f"5. rolled back {DAILY_REVENUE} {ROLLBACK_DAY}: restored {rolled.serving}")
    if readers is not None:
        _echo_readers(readers)
    # Named in full: these work from any folder (an installed package has no pyproject naming the demo).
    where = f"--home {app.home} -m {app.module}"
    click.echo(f"done in {summary['seconds']} s. Look closer:")
    click.echo(f"  backfill-assets {where} request show {request_id}")
    click.echo(f"  backfill-assets {where} versions {DAILY_REVENUE} {DEFECT_DAY}")
    click.echo(f"  DAGSTER_HOME={app.home} dagster dev -m {app.module} -h 127.0.0.1 -p 3000")


def _echo_readers(readers: ReadersCompared) -> None:
    click.echo(f"6. October read by DuckDB, an engine that knows nothing of backfill_assets ({REVENUE_COLUMN}):")
    for label, read in (("the published Iceberg table " + readers.table, readers.iceberg),
                        ("every Parquet file in the warehouse folder", readers.folder),
                        ("the catalog's pointers (what the library serves)", readers.published)):
        click.echo(f"     {label}: {read.days} day(s), {read.rows} rows, total {read.total:,.2f}")
    same = readers.iceberg == readers.published
    click.echo(f"   the table {'matches' if same else 'DOES NOT match'} the pointers; the folder holds every version "
               "side by side (superseded, rejected, rolled back): docs/READING.md")


def days_by_worker(written: Iterable[Version]) -> dict[str, list[str]]:
    """The days each worker computed for the request (any attempt, any asset), from the versions it wrote."""
    found: dict[str, set[str]] = {}
    for version in written:
        found.setdefault(version.worker or "unknown", set()).add(version.partition_key)
    return {worker: sorted(days) for worker, days in sorted(found.items())}


def day_ranges(days: list[str]) -> list[str]:
    """Sorted ISO days as runs of consecutive days: ["2022-10-01..10-03", "2022-10-07"]."""
    ranges: list[list[date]] = []
    for day in sorted(date.fromisoformat(d) for d in days):
        if ranges and day - ranges[-1][-1] == timedelta(days=1):
            ranges[-1].append(day)
        else:
            ranges.append([day])
    return [f"{r[0]}..{r[-1].strftime('%m-%d')}" if len(r) > 1 else str(r[0]) for r in ranges]


def defect_day_outcome(day_versions: Iterable[Version], request_id: str, before: Version | None,
                       serving: Version | None) -> dict:
    """What the catalog says of the defect day's versions (``day_versions``) under this request: read, never
    assumed."""
    mine = [v for v in day_versions if v.request_id == request_id]
    rejected = [v for v in mine if v.state == VersionState.REJECTED.value]
    return {
        "partition_key": DEFECT_DAY,
        "request_versions": [{"version_id": v.version_id, "state": v.state} for v in mine],
        "rejected_version_id": rejected[-1].version_id if rejected else None,
        "failed_checks": [c["name"] for c in (rejected[-1].checks or []) if not c.get("passed")] if rejected else [],
        "error": rejected[-1].error if rejected else None,
        "serving_before": before.version_id if before else None,
        "serving_now": serving.version_id if serving else None,
        "old_version_kept": bool(serving and before and serving.version_id == before.version_id),
    }


def describe_defect_day(defect: dict) -> list[str]:
    day = f"{DAILY_REVENUE} {defect['partition_key']}"
    serving = defect["serving_now"] or "nothing"
    if defect["rejected_version_id"] is None:
        states = ", ".join(f"{v['version_id']} {v['state']}" for v in defect["request_versions"]) or "no version"
        return [f"{day}: NOT rejected, although a defect was injected ({states}); serving {serving}"]
    lines = [
        f"{day}: rejected {defect['rejected_version_id']}",
        f"    failed checks: {', '.join(defect['failed_checks']) or 'none recorded'} ({defect['error']})",
    ]
    if defect["old_version_kept"]:
        lines.append(f"    still serving the version from before the backfill: {serving}")
    else:
        lines.append(f"    serving {serving} (before the backfill: {defect['serving_before'] or 'nothing'})")
    return lines
