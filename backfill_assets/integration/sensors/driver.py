"""The backfill driver sensor: submits runs for open requests (docs/ARCHITECTURE.md#requests); runs in the daemon."""

from datetime import timedelta
from typing import Iterator

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.model.gates import team_of_request, upstream_first
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.model.states import FINISHED_RUN_STATUSES
from backfill_assets.engine.plan.adoption import driven_cells
from backfill_assets.engine.plan.driver_tick import (
    QUEUED_PER_SLOT,
    REREQUEST_GRACE_SECONDS,
    Submission,
    TickResult,
    tick,
)
from backfill_assets.engine.plan.idle_ticks import IdleTicks, TickInputs
from backfill_assets.engine.plan.propagation import PROPAGATION_CURSOR, propagation_cursor
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.cursors import read_cursor
from backfill_assets.engine.store.daemon_lease import DaemonLease
from backfill_assets.engine.store.handoffs import OPEN as HANDOFF_OPEN
from backfill_assets.engine.store.handoffs import Handoffs
from backfill_assets.engine.store.ledger import Ledger, RequestRecord
from backfill_assets.engine.store.tick_tokens import LedgerState
from backfill_assets.integration.assets.chunks import CHUNK_JOB, chunk_run_config, chunk_tags
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.keys import asset_key, node_name
from backfill_assets.integration.request_jobs import CLOSED_STAGE, report_run_request
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.cell_facts import cell_facts_source
from backfill_assets.integration.runs.dagster_adapter import enforces_one_run_per_tag_value
from backfill_assets.integration.runs.runs import run_view, run_views_by_key, runs_of_request
from backfill_assets.integration.sensors import SENSOR_INTERVAL_SECONDS
from backfill_assets.integration.sensors.evaluation import SensorResource, evaluation_instance
from backfill_assets.process_gc import freeze_once

DRIVER_SENSOR = "backfill_driver"
DRIVER_INTERVAL_SECONDS = SENSOR_INTERVAL_SECONDS
# The cells whose facts a tick reads at once when it first decides one (doubling if it decides more), unless its
# runs can take more (``facts_window``).
FACTS_WINDOW = 32


def run_tags_for(record: RequestRecord) -> dict[str, str]:
    spec = record.spec
    tags = {
        T.REQUEST_ID: record.request_id,
        T.CODE_VERSION: record.code_version,
        T.REPROCESS: spec.reprocess,
        T.DOWNSTREAM: spec.downstream,
        T.LANE: T.LANE_BACKFILL,
        T.REQUESTED_BY: spec.requested_by,
        T.REQUESTED_AT: record.requested_at,
        T.DAGSTER_PRIORITY: str(T.PRIORITY_BACKFILL),
    }
    if spec.allow_side_effects:
        tags[T.ALLOW_SIDE_EFFECTS] = ",".join(spec.allow_side_effects)
        tags[T.APPROVED_BY] = spec.approved_by or ""
    return tags


def run_config_for(graph: AssetGraph, submission: Submission) -> dict:
    """The run's config: per asset, the asset's own config frozen in the request."""
    if submission.batched:
        return chunk_run_config(submission.days_by_asset(graph), submission.configs)
    configs = submission.configs.items()
    return {"ops": {node_name(asset): {"config": dict(config)} for asset, config in configs if config}}


def team_for(graph: AssetGraph, record: RequestRecord) -> str:
    """The team the request's runs are charged to (``engine/model/gates.py``): the run queue's per-team limit."""
    requested = upstream_first([a for a in record.spec.assets if a in graph], {s.name: s.upstream for s in graph})
    return team_of_request((a, graph[a].owners) for a in requested)


def run_request_for(graph: AssetGraph, record: RequestRecord, submission: Submission) -> dg.RunRequest:
    tags = run_tags_for(record) | {T.TEAM: team_for(graph, record)}
    if submission.slot is not None:
        tags[T.SLOT] = f"{record.request_id}/{submission.slot}"
    if submission.batched:
        return dg.RunRequest(
            run_key=submission.run_key,
            job_name=CHUNK_JOB,
            tags=tags | chunk_tags(submission.days_by_asset(graph)),
            run_config=run_config_for(graph, submission),
        )
    return dg.RunRequest(
        run_key=submission.run_key,
        job_name=BACKFILL_JOB,
        partition_key=submission.partition,
        asset_selection=[asset_key(a) for a in submission.assets],
        tags=tags,
        run_config=run_config_for(graph, submission),
    )


def downstream_hold(catalog: Catalog, record: RequestRecord, location: str = "") -> str | None:
    """Why a request with a downstream policy must stay open although its cells are done, if it must."""
    if record.spec.downstream == M.DownstreamPolicy.NONE:
        return None
    last_seq = catalog.last_publish_seq(record.request_id)
    seen = read_cursor(catalog, propagation_cursor(location), missing=PROPAGATION_CURSOR)
    if last_seq is not None and last_seq > seen:
        return "waiting for the propagation sensor to see its publishes"
    open_handoffs = Handoffs(catalog).list(record.request_id, status=HANDOFF_OPEN)
    if open_handoffs:
        return f"{len(open_handoffs)} handoff(s) open: " + ", ".join(h.handoff_id for h in open_handoffs)
    return None


def followed_runs(instance: dg.DagsterInstance, cells: list[Cell]) -> dict[str, RunView]:
    """The runs following cells wait for (another request's, production's, a UI backfill's), by id; a run deleted
    from Dagster is absent."""
    return _runs_by_id(instance, _followed_ids(cells))


def _followed_ids(cells: list[Cell]) -> tuple[str, ...]:
    return tuple(sorted({c.dagster_run_id for c in cells if c.decision == M.FOLLOWING and c.dagster_run_id}))


def _runs_by_id(instance: dg.DagsterInstance, ids: tuple[str, ...]) -> dict[str, RunView]:
    if not ids:
        return {}
    return {run.run_id: run_view(run) for run in instance.get_runs(filters=dg.RunsFilter(run_ids=list(ids)))}


def facts_window(record: RequestRecord, queue_ahead: bool) -> int:
    """How many pending cells' facts a tick reads when it first decides one: as many as its runs can take when every
    slot is free (K days of each asset per run), so that a batched tick reads them in one go. Each read asks
    Dagster for each asset's partition status, whatever its size: doubling from a few cells, a ten-year request's
    first tick (four runs of 366 days) read its facts in nine."""
    spec = record.spec
    runs = spec.effective_max_active * (QUEUED_PER_SLOT + 1 if queue_ahead else 1)
    return max(FACTS_WINDOW, runs * spec.partitions_per_run * len(spec.assets))


def rerequest_before(catalog: Catalog) -> str:
    """Submitted cells recorded before this time whose run is missing are requested again: older than the grace
    (whoever recorded them has long created their runs, or died), or older than the daemon now holding the
    instance's lease (the daemon that recorded them has stopped: a restart heals at once)."""
    cutoff = iso(utc_now() - timedelta(seconds=REREQUEST_GRACE_SECONDS))
    lease = DaemonLease(catalog).current()
    return max(cutoff, lease.acquired_at) if lease is not None and lease.live(utc_now()) else cutoff


def drive_request(
    graph: AssetGraph,
    instance: dg.DagsterInstance,
    catalog: Catalog,
    record: RequestRecord,
    loaded_code_version: str,
    idle: IdleTicks | None = None,
) -> list[Submission]:
    """One tick of ``record``, recorded; the runs to request. With ``idle`` (the sensor's), a tick given what the
    request's last tick that changed nothing was given is skipped before the request's cells are read."""
    ledger = Ledger(catalog)
    if record.status == M.WAITING and not ledger.try_claim(record.request_id):
        return []
    if idle is not None and _still_idle(idle, graph, instance, catalog, record, loaded_code_version):
        return []
    # The tick token first: another driver that records this request meanwhile makes this tick record nothing.
    snapshot = ledger.snapshot(record.request_id)
    record, cells = snapshot.record, snapshot.cells
    adopted = record.source not in M.DRIVEN_SOURCES
    if adopted:
        # Dagster's daemon runs an adopted backfill's own cells; the driver runs what its downstream policy added.
        cells = driven_cells(cells)
        if not cells:
            return []
    runs_by_key = run_views_by_key(runs_of_request(instance, record.request_id))
    followed = followed_runs(instance, cells)
    # The versions a tick reads are those of the runs it settles: finished runs of submitted and following cells.
    submitted = {c.run_key for c in cells if c.decision == M.SUBMITTED}
    settling = [v.run_id for k, v in runs_by_key.items() if k in submitted and v.status in FINISHED_RUN_STATUSES]
    settling += [v.run_id for v in followed.values() if v.status in FINISHED_RUN_STATUSES]
    by_run: dict[tuple[str, str, str], str] = {}
    errors: dict[tuple[str, str, str], str | None] = {}
    if settling:
        for v in catalog.version_outcomes_of_dagster_runs(settling):
            by_run[(v.asset, v.partition_key, v.dagster_run_id)] = v.state
            errors[(v.asset, v.partition_key, v.dagster_run_id)] = v.error
    pending = [c.key for c in sorted((c for c in cells if c.decision == M.PENDING), key=lambda c: c.ordinal)]
    queue_ahead = enforces_one_run_per_tag_value(instance, T.SLOT)
    hold_open = downstream_hold(catalog, record, graph.location)
    result = tick(
        graph,
        record,
        cells,
        runs_by_key,
        lambda a, p, run_id: by_run.get((a, p, run_id)),
        # Read when decided (most ticks decide nothing: every slot is taken), for the cells decided.
        cell_facts_source(graph, catalog, instance, pending, window=facts_window(record, queue_ahead)),
        loaded_code_version,
        cascade_confirmed=record.confirmed_at is not None,
        hold_open=hold_open,
        queue_ahead=queue_ahead,
        version_error_of=lambda a, p, run_id: errors.get((a, p, run_id)),
        rerequest_before=rerequest_before(catalog),
        followed_runs=followed,
    )
    # Record decisions before the run requests leave the sensor: a crash in between is healed by re-requesting
    # the same run keys next tick, never by submitting twice.
    # Only if nothing the tick read changed: a cancel that committed meanwhile wins, and of two drivers ticking
    # this request at once (two daemons on one instance) the second submits nothing.
    if not ledger.record_tick(snapshot, result.cell_updates):
        if idle is not None:
            idle.forget(record.request_id)
        return []
    if idle is not None and not adopted and changed_nothing(result, record, cells, runs_by_key):
        # What the next tick compares with: the ledger as this tick read it, its token moved on by this record.
        idle.remember(record.request_id, TickInputs(
            LedgerState.of(snapshot.token + 1, record, cells), TickInputs.runs(runs_by_key),
            TickInputs.runs(followed), loaded_code_version, queue_ahead, hold_open,
        ), _followed_ids(cells))
    elif idle is not None:
        idle.forget(record.request_id)
    # An adopted request's status is the adoption sensor's: it sees the backfill's cells too.
    if not adopted and result.status and (result.status[0], result.status[1]) != (record.status, record.message):
        ledger.set_status(record.request_id, *result.status, expect_status=record.status)
    return result.submissions


def changed_nothing(
    result: TickResult, record: RequestRecord, cells: list[Cell], runs_by_key: dict[str, RunView]
) -> bool:
    """Whether a tick changed nothing and would change nothing again given the same inputs: no cell update, no run
    request, the request's status as it was, and no submitted cell whose run is missing (its re-request waits on
    the clock, not on an input)."""
    if result.cell_updates or result.submissions:
        return False
    if result.status is not None and result.status != (record.status, record.message):
        return False
    return not any(c.decision == M.SUBMITTED and c.run_key not in runs_by_key for c in cells)


def _still_idle(
    idle: IdleTicks, graph: AssetGraph, instance: dg.DagsterInstance, catalog: Catalog, record: RequestRecord,
    loaded_code_version: str,
) -> bool:
    """Whether the request's tick now is given what its last tick that changed nothing was given (``IdleTicks``):
    its ledger state (token, row, cells counted by decision), its runs, the runs its following cells wait for."""
    followed_ids = idle.followed_run_ids(record.request_id)
    if followed_ids is None:
        return False
    state = Ledger(catalog).state(record.request_id)
    if state is None:
        return False
    inputs = TickInputs(
        state,
        TickInputs.runs(run_views_by_key(runs_of_request(instance, record.request_id))),
        TickInputs.runs(_runs_by_id(instance, followed_ids)),
        loaded_code_version,
        enforces_one_run_per_tag_value(instance, T.SLOT),
        downstream_hold(catalog, record, graph.location),
    )
    return idle.unchanged(record.request_id, inputs)


def drives(graph: AssetGraph, record: RequestRecord) -> bool:
    """Whether this code location's driver submits the runs of an open request."""
    if record.source not in M.DRIVEN_SOURCES and record.spec.downstream == M.DownstreamPolicy.NONE:
        return False  # adopted backfills are run by Dagster's own backfill daemon
    # Another code location's request is its own driver's (locations sharing a catalog share its ledger).
    return set(record.spec.assets) <= set(graph.names)


def build_driver_sensor(
    graph: AssetGraph, jobs: list[dg.JobDefinition], backfill: BackfillResource | None = None
) -> dg.SensorDefinition:
    resource = SensorResource(backfill)
    # The idle ticks of this code server's driver, per catalog: a request's cells are not read again while nothing
    # changed.
    idle_ticks: dict[str, IdleTicks] = {}

    @dg.sensor(
        name=DRIVER_SENSOR,
        minimum_interval_seconds=DRIVER_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        jobs=jobs,
        description="Submits runs for open backfill requests: order, max_active, reprocess decided at submit time.",
    )
    def backfill_driver(context: dg.SensorEvaluationContext) -> Iterator[dg.RunRequest]:
        freeze_once()  # the code server's Dagster and definitions out of the collector's reach (process_gc.py)
        catalog, instance = resource.get().catalog(), evaluation_instance(context)
        loaded = code_version(sources=graph.code_sources)
        # The code version this code server runs, where `request create`'s own tick reads it (runs/direct_tick.py):
        # a request frozen under other code is left to this sensor, which blocks it.
        context.update_cursor(loaded)
        ledger = Ledger(catalog)
        records = ledger.list(statuses=M.ACTIVE_STATUSES)
        idle = idle_ticks.setdefault(catalog.url, IdleTicks())
        idle.keep({r.request_id for r in records})
        for record in records:
            if not drives(graph, record):
                continue
            for submission in drive_request(graph, instance, catalog, record, loaded, idle):
                yield run_request_for(graph, record, submission)
            if record.source == M.RequestSource.LAUNCHPAD and ledger.get(record.request_id).status in M.CLOSED_STATUSES:
                # Made in the UI: its report is read in the UI too.
                yield report_run_request(record.request_id, CLOSED_STAGE)

    return backfill_driver
