"""The production trigger: the one thing that launches production runs of a code location (docs/OPERATIONS.md,
"Production runs and catchup"). Reads the clock, its cursor and the cells' facts, asks the engine's
``plan_production`` what to submit, and turns that into production-lane run requests."""

from __future__ import annotations

from datetime import datetime
from typing import Callable

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.catchup import (
    Action,
    CatchupSettings,
    CellNow,
    IntervalDecision,
    cells_to_read,
    due_intervals,
    plan_production,
)
from backfill_assets.integration.jobs import PRODUCTION_JOB
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.cell_facts import production_facts
from backfill_assets.integration.sensors.evaluation import SensorResource, evaluation_instance

PRODUCTION_SENSOR = "production_trigger"
# Nothing is due for most of a day, and then an evaluation reads no facts at all: once a minute is plenty.
PRODUCTION_INTERVAL_SECONDS = 60
PRODUCTION_RUN_KEY = "production/{}"
PRODUCTION_TAGS = {T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PRIORITY: str(T.PRIORITY_PRODUCTION)}
# Decisions written to the tick's log per evaluation (a long catchup lists the rest as a count).
LOGGED_DECISIONS = 20


def production_run_request(graph: AssetGraph, decision: IntervalDecision) -> dg.RunRequest:
    # The whole job when every asset runs (as the schedule did); otherwise just what is left to publish.
    selection = None if set(decision.assets) == set(graph.names) else [asset_key(a) for a in decision.assets]
    return dg.RunRequest(
        run_key=PRODUCTION_RUN_KEY.format(decision.partition),
        job_name=PRODUCTION_JOB,
        partition_key=decision.partition,
        asset_selection=selection,
        tags=dict(PRODUCTION_TAGS),
    )


def build_production_sensor(
    graph: AssetGraph, settings: CatchupSettings, production_job: dg.UnresolvedAssetJobDefinition,
    clock: Callable[[], datetime] = utc_now, backfill: BackfillResource | None = None,
) -> dg.SensorDefinition:
    """The production trigger for ``graph``, launching ``production_job``; ``clock`` is its "now" (tests move a
    fake one)."""
    resource = SensorResource(backfill)
    settings.check(graph.calendar)
    catchup = "every missed interval in order" if settings.catchup else "only the newest"
    start = f", never before {settings.start.isoformat()}" if settings.start else ""

    # Shipped STOPPED: the demo's source holds 2022 data, so a running trigger would publish an empty "yesterday"
    # every night in every checkout that runs `dagster dev`. A deployment starts it once; Dagster keeps that state.
    @dg.sensor(
        name=PRODUCTION_SENSOR,
        minimum_interval_seconds=PRODUCTION_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.STOPPED,
        jobs=[production_job],
        description=f"Production: every complete business day, one hour after it ends, in the production lane; "
                    f"after downtime, catchup={settings.catchup}: {catchup}{start}. Cursor: the last day handled.",
    )
    def production_trigger(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        now = clock()
        due = due_intervals(graph.calendar, now, context.cursor, settings)
        cells = cells_to_read(graph, due)
        facts = production_facts(graph, resource.get().catalog(), evaluation_instance(context), cells) if cells else {}
        plan = plan_production(graph, now=now, cursor=context.cursor, settings=settings,
                               facts_of=lambda asset, partition: facts.get((asset, partition), CellNow()))
        for line in [*plan.notes, *(d.label for d in plan.decisions[:LOGGED_DECISIONS])]:
            context.log.info(line)
        if len(plan.decisions) > LOGGED_DECISIONS:
            context.log.info(f"… and {len(plan.decisions) - LOGGED_DECISIONS} more interval(s)")
        run_requests = [production_run_request(graph, d) for d in plan.submissions]
        if run_requests:
            return dg.SensorResult(run_requests=run_requests, cursor=plan.cursor)
        return dg.SensorResult(skip_reason=_skip_reason(plan.decisions), cursor=plan.cursor)

    return production_trigger


def _skip_reason(decisions: tuple[IntervalDecision, ...]) -> str:
    if not decisions:
        return "no complete interval is due"
    waiting = [d for d in decisions if d.action == Action.WAIT]
    return waiting[0].label if waiting else "; ".join(d.label for d in decisions[-3:])
