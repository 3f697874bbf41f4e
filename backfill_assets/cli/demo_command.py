"""``backfill-assets demo``: the October story of DESIGN §11 on the embedded default."""

from __future__ import annotations

import time

import click
import dagster as dg

from backfill_assets.core import tags as T
from backfill_assets.core.domain import DAILY_REVENUE
from backfill_assets.core.intervals import iso, utc_now
from backfill_assets.core.settings import code_version
from backfill_assets.core.source import SourceSystem

from .app import AppContext, cli, emit, json_option
from .data_commands import DEMO_CALENDAR

SEED_FROM, SEED_TO = "2022-09-01", "2022-11-30"
BACKFILL_FROM, BACKFILL_TO = "2022-10-01", "2022-10-31"
DEFECT_DAY = "2022-10-17"


@cli.command()
@click.option("--orders-per-day", default=500, show_default=True, type=int)
@json_option
@click.pass_obj
def demo(app: AppContext, orders_per_day: int, as_json: bool) -> None:
    """Seed Sep–Nov 2022, run production, backfill October with one defective day, roll one day back.

    Example: backfill-assets demo
    """
    from backfill_assets.defs.local_runs import run_partitions

    say = (lambda msg: None) if as_json else click.echo
    settings = app.settings()
    started = time.monotonic()
    SourceSystem(settings.source_url).seed(DEMO_CALENDAR, SEED_FROM, SEED_TO, orders_per_day)
    say(f"seeded source {SEED_FROM}..{SEED_TO} ({orders_per_day} orders/day) at {settings.source_url}")

    instance = dg.DagsterInstance.get()
    catalog = app.catalog()
    production_keys = [
        k for k in DEMO_CALENDAR.keys_between(SEED_FROM, SEED_TO) if catalog.current(DAILY_REVENUE, k) is None
    ]
    say(f"production: {len(production_keys)} day(s) to run (one Dagster run per day, in order)")
    production = run_partitions(instance, production_keys)
    say(f"production: {sum(r.success for r in production)} succeeded, {sum(not r.success for r in production)} failed")

    request_id = f"req-demo-{utc_now().strftime('%Y%m%d%H%M%S')}"
    keys = DEMO_CALENDAR.keys_between(BACKFILL_FROM, BACKFILL_TO)
    before = {k: catalog.current(DAILY_REVENUE, k) for k in keys}
    say(f"backfill {request_id}: {DAILY_REVENUE} {BACKFILL_FROM}..{BACKFILL_TO}, defect injected on {DEFECT_DAY}")
    backfill = run_partitions(
        instance,
        keys,
        assets=[DAILY_REVENUE],
        tags={
            T.REQUEST_ID: request_id,
            T.LANE: T.LANE_BACKFILL,
            T.DAGSTER_PRIORITY: str(T.PRIORITY_BACKFILL),
            T.CODE_VERSION: code_version(),
            T.REQUESTED_AT: iso(utc_now()) or "",
            T.REQUESTED_BY: "demo",
        },
        run_config_for={DEFECT_DAY: {"ops": {DAILY_REVENUE: {"config": {"inject_defect": "drop_rows"}}}}},
    )
    published = [r for r in backfill if r.success]
    rejected = [r for r in backfill if not r.success]
    serving = catalog.current(DAILY_REVENUE, DEFECT_DAY)
    rolled = catalog.rollback(DAILY_REVENUE, BACKFILL_FROM, "demo: show a rollback")
    summary = {
        "request_id": request_id,
        "published": len(published),
        "rejected": len(rejected),
        "rejected_days": [r.partition_key for r in rejected],
        "still_serving_on_defect_day": serving.version_id if serving else None,
        "old_version_kept": bool(serving and before[DEFECT_DAY] and serving.version_id == before[DEFECT_DAY].version_id),
        "rollback": {"restored": rolled.version_id, "rolled_back": rolled.previous_version_id},
        "seconds": round(time.monotonic() - started, 1),
        "dagster_home": str(app.home),
    }

    def human() -> None:
        click.echo(f"\n{request_id}: {len(published)} published, {len(rejected)} rejected")
        for r in rejected:
            click.echo(f"  rejected {r.partition_key}: {r.failure}")
        click.echo(f"  {DAILY_REVENUE} {DEFECT_DAY} still serves {summary['still_serving_on_defect_day']}")
        click.echo(f"rollback of {DAILY_REVENUE} {BACKFILL_FROM}: restored {rolled.version_id}")
        click.echo(f"done in {summary['seconds']} s. See it in the UI:")
        click.echo(f"  DAGSTER_HOME={app.home} dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000")
        click.echo(f"  backfill-assets versions {DAILY_REVENUE} {DEFECT_DAY}")

    emit(summary, as_json, human)
