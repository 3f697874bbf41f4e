"""Adoption sensor: backfills launched from the Dagster UI or ``dagster job backfill`` join the ledger."""

import time

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Skip
from backfill_assets.engine.model.errors import bounded
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.plan.admission import adopted_request_id, launch_tags_refusal
from backfill_assets.engine.plan.adoption import (
    AdoptedRun,
    adopted_spec,
    awaiting_confirmation,
    track_adopted,
    unpaced_note,
)
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.plan.driver_tick import code_version_block
from backfill_assets.engine.store.admissions import Admissions
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.integration.launching_user import DAGSTER_PLUS_USER_TAG, launching_user
from backfill_assets.integration.request_jobs import ADOPTED_STAGE, CLOSED_STAGE, report_run_request
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.coordinator import paced_max_active, release_stale_holds
from backfill_assets.integration.runs.dagster_adapter import BackfillInfo, list_backfills, run_queue_limits
from backfill_assets.integration.runs.runs import run_assets, run_view, runs_of_request
from backfill_assets.integration.sensors import SENSOR_INTERVAL_SECONDS
from backfill_assets.integration.sensors.driver import downstream_hold, followed_runs
from backfill_assets.integration.sensors.evaluation import SensorResource, evaluation_instance
from backfill_assets.integration.service_wiring import backfills_for_instance
from backfill_assets.service import Backfills

ADOPTION_SENSOR = "backfill_adoption"


def adopt_and_track(
    graph: AssetGraph, instance: dg.DagsterInstance, repository_def: dg.RepositoryDefinition, catalog: Catalog
) -> tuple[list[str], list[str], list[str]]:
    """Register new Dagster backfills and update the cells of adopted ones; returns the ids newly adopted, newly
    closed, and one line per backfill that could not be handled this tick (the others are handled regardless)."""
    adopting = backfills_for_instance(graph, instance, catalog, M.RequestSource.DAGSTER)
    loaded = adopting.code_version()
    adopted: list[str] = []
    closed: list[str] = []
    failed: list[str] = []
    for info in list_backfills(instance, repository_def, library_assets=graph.names):
        request_id = adopted_request_id(info.backfill_id)
        try:
            newly_adopted, newly_closed = _adopt_and_track_one(graph, instance, catalog, adopting, loaded, info)
        except Exception as exc:  # noqa: BLE001 - one backfill's fault must not stop the sensor for the others
            failed.append(f"backfill {info.backfill_id}: {type(exc).__name__}: {bounded(str(exc))}")
            continue
        adopted += [request_id] if newly_adopted else []
        closed += [request_id] if newly_closed else []
    return adopted, closed, failed


def _adopt_and_track_one(
    graph: AssetGraph, instance: dg.DagsterInstance, catalog: Catalog, adopting: Backfills, loaded: str,
    info: BackfillInfo,
) -> tuple[bool, bool]:
    """One Dagster backfill: (adopted by this call, closed by this call)."""
    ledger = Ledger(catalog)
    newly_adopted = False
    request_id = adopted_request_id(info.backfill_id)
    if not ledger.exists(request_id):
        if info.tags.get(T.REQUEST_ID):
            return False, False  # launched by our own driver under a request of its own
        launched_by = launching_user({**info.tags, **({DAGSTER_PLUS_USER_TAG: info.user} if info.user else {})})
        paced = paced_max_active(instance)
        spec = adopted_spec(graph, info.cells, info.tags, info.user, paced, launched_by)
        # As `request create` says it: the run queue may let fewer of its runs execute than max_active (or, with
        # another run coordinator, its runs are not paced at all); and a launch tag its steps refuse is said on
        # the request itself.
        note: str | None
        if paced is None:
            note = unpaced_note(info.tags)
        else:
            note = QueueLimits(*run_queue_limits(instance), "the instance's run queue").concurrency(spec).note
        note = "; ".join(filter(None, [launch_tags_refusal(info.tags), note])) or None
        adopting.freeze(spec, left_out={}, request_id=request_id, message=note)
        newly_adopted = True
    record = ledger.get(request_id)
    if record.status in M.CLOSED_STATUSES:
        return newly_adopted, False
    release_stale_holds(instance, info.backfill_id, time.time())
    runs = [AdoptedRun(view=run_view(run), assets=tuple(run_assets(run, graph)))
            for run in runs_of_request(instance, request_id)]
    cells = ledger.cells(request_id)
    followed = followed_runs(instance, cells)
    states: dict[tuple[str, str, str], str] = {}
    skips: dict[tuple[str, str, str], Skip] = {}
    if runs:
        ids = [r.view.run_id for r in runs]
        for v in catalog.versions_of_dagster_runs([*ids, *followed]):
            states[(v.asset, v.partition_key, v.dagster_run_id)] = v.state
        skips = Admissions(catalog).skips_of_runs(ids)
    updates, status = track_adopted(
        graph,
        cells,
        runs,
        lambda a, p, run_id: states.get((a, p, run_id)),
        info.done,
        info.cancelled,
        lambda a, p, run_id: skips.get((a, p, run_id)),
        hold_open=downstream_hold(catalog, record, graph.location),
        followed_runs=followed,
    )
    status = awaiting_confirmation(request_id, record.spec, record.confirmed_at is not None, cells) or status
    ledger.update_cells(request_id, updates)
    if record.code_version != loaded:
        # The backfill's remaining steps refuse to publish under the new code (the gate's frozen version):
        # say so on the request, as the driver does for a request of ours.
        block = code_version_block(record.code_version, loaded)
        status = (status[0], f"{status[1]}; {block}") if status else (M.BLOCKED, block)
    if status and (status[0], status[1]) != (record.status, record.message):
        ledger.set_status(request_id, *status)
        return newly_adopted, status[0] in M.CLOSED_STATUSES
    return newly_adopted, False


def build_adoption_sensor(
    graph: AssetGraph, report_job: dg.JobDefinition, backfill: BackfillResource | None = None
) -> dg.SensorDefinition:
    resource = SensorResource(backfill)

    @dg.sensor(
        jobs=[report_job],
        name=ADOPTION_SENSOR,
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Adopts backfills launched from the Dagster UI or CLI into the request ledger as dg-<id>.",
    )
    def backfill_adoption(context: dg.SensorEvaluationContext):
        repository = context.repository_def
        if repository is None:  # Dagster evaluates a sensor within its code location's repository
            raise dg.DagsterInvariantViolationError(f"{ADOPTION_SENSOR} was evaluated without its repository")
        adopted, closed, failed = adopt_and_track(
            graph, evaluation_instance(context), repository, resource.get().catalog()
        )
        for line in failed:
            context.log.error(line)
        if adopted:
            context.log.info(f"adopted {', '.join(adopted)}")
        # Launched in the UI: its effective policy and, once the backfill is done, its reconcile report are read
        # in the UI too.
        requests = [report_run_request(request_id, ADOPTED_STAGE) for request_id in adopted]
        requests += [report_run_request(request_id, CLOSED_STAGE) for request_id in closed]
        return requests or dg.SkipReason(f"adopted {len(adopted)} new backfill(s)")

    return backfill_adoption
