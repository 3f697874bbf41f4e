"""A depends-on-past asset's day in a backfill launched from Dagster (the UI's dialog, `dagster job backfill`) is
computed only once the same backfill has published its previous day, on any instance.

The product's run coordinator queues such days one at a time, oldest first; Dagster's own coordinator (a stock
instance, Dagster+) queues them as they come, so two days can run at once, and nothing stopped a day from
computing after the backfill's run of its previous day was rejected. Either way the day read production's version
of its previous day, not the one the backfill was making. So the step, before computing, looks at the backfill's
latest run of the previous day (one that writes this asset):

- none: the previous day is not the backfill's to write (or a range run's, which writes its days in order itself);
- ended, and its version of the previous day published, or the cell left alone (the run succeeded and wrote none):
  the step computes;
- ended otherwise (its version rejected or abandoned, the run failed or was cancelled): the step refuses, naming the
  day and the run, as a request's driver skips the later days of a depends-on-past chain;
- running, and this step holds no pool slot the other step may need: the step waits for it to end (up to
  ``WAIT_SECONDS``), then decides as above; queued, or running while this step holds a pool slot: the step refuses
  at once, since waiting could hold what the other run needs. A step whose own run is marked cancelled while it
  waits (its worker reached by no signal) stops waiting and refuses.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.gates import pool_for
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.plan.admission import is_launched_from_dagster
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.integration.runs.runs import run_assets
from backfill_assets.integration.step_context import StepContext

# How long a day waits for the backfill's running run of its previous day: a hang detector, not a pace (run
# monitoring ends a run whose process died).
WAIT_SECONDS = 6 * 3600.0
POLL_SECONDS = 1.0
ENDED = frozenset({dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED})
RUNNING = frozenset({dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED})
SERVING = frozenset({VersionState.PUBLISHED.value, VersionState.SUPERSEDED.value})


def previous_day_refusal(
    context: StepContext, graph: AssetGraph, spec: DeclaredAsset, catalog: Catalog, key: str,
    stopped: Callable[[], str | None], wait_seconds: float = WAIT_SECONDS,
) -> str | None:
    """Why this step of a Dagster-launched backfill must not compute ``key`` of a depends-on-past asset yet (its
    previous day not published by the backfill), or None to compute; waits for a running previous day, unless
    its own run is found stopped meanwhile (``stopped``: why, or None)."""
    backfill_id = context.run.tags.get(T.DAGSTER_BACKFILL)
    previous = graph.calendar.previous_key(key)
    if not (spec.depends_on_past and previous and backfill_id and is_launched_from_dagster(context.run.tags)):
        return None
    deadline = time.monotonic() + wait_seconds
    waited = False
    while True:
        run = _latest_run_of(context, graph, spec.name, backfill_id, previous)
        if run is None:
            return None
        if run.status in ENDED:
            return _ended_refusal(catalog, spec.name, previous, run)
        if run.status not in RUNNING or pool_for(spec.pool, spec.upstream) is not None:
            return (f"previous day {previous} is not published yet: run {run.run_id[:8]} of this backfill is "
                    f"{_status_words(run.status)} (a depends-on-past asset's days run one at a time; this "
                    "instance's run queue did not hold them)")
        if time.monotonic() >= deadline:
            return f"previous day {previous}: run {run.run_id[:8]} of this backfill still running after the wait"
        if not waited:
            context.log.info(f"{spec.name} {key}: waiting for run {run.run_id[:8]} of this backfill to end: it "
                             f"computes the previous day {previous} (depends on past)")
            waited = True
        time.sleep(POLL_SECONDS)
        if reason := stopped():  # marked cancelled, its worker reached by no signal: it may not compute anyway
            return f"{reason} (it was waiting for run {run.run_id[:8]} of this backfill, the previous day {previous})"


def _latest_run_of(
    context: StepContext, graph: AssetGraph, asset: str, backfill_id: str, day: str
) -> dg.DagsterRun | None:
    """The backfill's newest run of ``day`` that writes ``asset``, other than this run."""
    runs = context.instance.get_runs(
        filters=dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id, T.DAGSTER_PARTITION: day})
    )
    for run in runs:  # newest first
        if run.run_id != context.run.run_id and asset in run_assets(run, graph):
            return run
    return None


def _ended_refusal(catalog: Catalog, asset: str, day: str, run: dg.DagsterRun) -> str | None:
    written = [v for v in catalog.versions_of(asset, day) if v.dagster_run_id == run.run_id]
    if written and written[-1].state in SERVING:
        return None
    if not written and run.status == dg.DagsterRunStatus.SUCCESS:
        return None  # left alone by the backfill's policy: the version serving the day is the one to read
    outcome = f"its version {written[-1].version_id} is {written[-1].state}" if written else (
        f"the run ended {_status_words(run.status)} without writing it")
    return f"previous day {day} not published by this backfill (run {run.run_id[:8]}: {outcome})"


def _status_words(status: dg.DagsterRunStatus) -> str:
    return status.value.lower().replace("_", " ")  # QUEUED: "queued", NOT_STARTED: "not started"
