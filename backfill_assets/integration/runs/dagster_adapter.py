"""The one place that touches ``dagster._core``: reading Dagster backfills for adoption and for pacing their
runs, asset tags from a run coordinator's workspace, the run queue's tag limits, two asset events the public
API cannot build, and the four pieces of a run launcher Dagster does not export (the run worker's entry point,
its arguments, reconstructing a code location from a run's origin, the worker health result).

Dagster 1.13 has no public API that lists backfills with their target partitions; ``DagsterInstance
.get_backfills`` returns ``PartitionBackfill`` objects whose classes live in ``dagster._core.execution.backfill``.
A check evaluation reported by a step that writes several days (a range step, a chunk op) can only point at the
materialization it judged through ``AssetCheckEvaluationTargetMaterializationData``, and an op job (the chunk
run) plans no materialization, so Dagster would never show a day it rejected as Failed without the planned event
``report_materialization_planned`` records.
A run launcher (``warm_launcher.py``) must start a run worker as ``dagster api execute_run`` does: Dagster exports
``DefaultRunLauncher`` but not ``ExecuteRunArgs``, the command's body, ``recon_repository_from_origin`` nor
``CheckRunHealthResult``/``WorkerStatus``, which run monitoring reads. tests/integration/test_warm_launcher.py
runs real runs through them.
The shipped dagster.yaml's event log is Dagster's ``SqliteEventLogStorage`` keeping its SQLAlchemy engines (no public
hook reaches how a storage creates them); tests/integration/test_sqlite_storage.py pins it against Dagster's class.
Everything else in the project goes through ``import dagster as dg`` (tests/engine/test_layering.py keeps the engine
free of Dagster). tests/integration/test_dagster_adapter.py pins this module's behaviour against real backfills,
tests/e2e/test_ui_adoption.py the UI path, and tests/integration/test_check_dashboards.py the two events (check
targets and Failed days, read back through the instance and the UI's GraphQL), so a Dagster upgrade that breaks it
fails loudly.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.events import AssetMaterializationPlannedData, DagsterEvent
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS, SqliteEventLogStorage
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from backfill_assets.engine.model.concurrency import RunLimit, run_limits
from backfill_assets.engine.model.intervals import iso

ACTIVE = {BulkActionStatus.REQUESTED, BulkActionStatus.CANCELING, BulkActionStatus.FAILING}
CANCELLED = {BulkActionStatus.CANCELED, BulkActionStatus.CANCELING}


@dataclass(frozen=True)
class BackfillInfo:
    backfill_id: str
    status: str
    done: bool
    cancelled: bool
    tags: dict[str, str]
    created_at: str
    title: str | None
    description: str | None
    user: str | None
    cells: tuple[tuple[str, str], ...]


def list_backfills(
    instance: dg.DagsterInstance, repository_def: dg.RepositoryDefinition, limit: int = 50
) -> list[BackfillInfo]:
    infos = []
    for backfill in instance.get_backfills(limit=limit):
        cells = _cells(backfill, repository_def)
        if cells is None:
            continue  # not a partitioned backfill of this code location
        infos.append(
            BackfillInfo(
                backfill_id=backfill.backfill_id,
                status=backfill.status.value,
                done=backfill.status not in ACTIVE,
                cancelled=backfill.status in CANCELLED,
                tags=dict(backfill.tags or {}),
                created_at=iso(datetime.fromtimestamp(backfill.backfill_timestamp, tz=timezone.utc)) or "",
                title=backfill.title,
                description=backfill.description,
                user=backfill.user,
                cells=tuple(cells),
            )
        )
    return infos


def _cells(backfill: PartitionBackfill, repository_def: dg.RepositoryDefinition) -> list[tuple[str, str]] | None:
    known = {k.to_user_string() for k in repository_def.asset_graph.get_all_asset_keys()}
    if backfill.is_asset_backfill:
        data = backfill.get_asset_backfill_data(repository_def.asset_graph)
        cells = [
            (akpk.asset_key.to_user_string(), akpk.partition_key)
            for akpk in data.target_subset.iterate_asset_partitions()
            if akpk.partition_key is not None
        ]
    else:
        job_name = backfill.job_name
        if not job_name or not repository_def.has_job(job_name) or not backfill.partition_names:
            return None
        job = repository_def.get_job(job_name)
        assets = [k.to_user_string() for k in job.asset_layer.executable_asset_keys]
        cells = [(a, p) for p in backfill.partition_names for a in assets]
    cells = [c for c in cells if c[0] in known]
    return cells or None


def backfill_partitions(instance: dg.DagsterInstance, backfill_id: str, asset_graph) -> list[str]:
    """The partition keys a Dagster backfill targets, sorted; ``asset_graph`` is any asset graph of the code
    location (a ``RepositoryDefinition``'s, or the run coordinator's workspace's)."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is None:
        return []
    if backfill.is_asset_backfill:
        data = backfill.get_asset_backfill_data(asset_graph)
        keys = {akpk.partition_key for akpk in data.target_subset.iterate_asset_partitions()}
    else:
        keys = set(backfill.partition_names or ())
    return sorted(k for k in keys if k)


def workspace_asset_tags(workspace, asset_keys) -> dict[str, dict[str, str]]:
    """The definition tags of ``asset_keys`` as the run coordinator's workspace knows them (a
    ``SubmitRunContext.workspace``: its asset graph is a ``dagster._core`` object, read through its properties)."""
    graph = workspace.asset_graph
    return {key.to_user_string(): dict(graph.get(key).tags or {}) for key in asset_keys if graph.has(key)}


def cancel_backfill(instance: dg.DagsterInstance, backfill_id: str) -> str | None:
    """Ask Dagster's backfill daemon to cancel a backfill, as the UI's "Cancel backfill" does (status CANCELING:
    it launches nothing more and terminates the backfill's runs). Returns the status now, None if unknown."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is None:
        return None
    if backfill.status in ACTIVE and backfill.status is not BulkActionStatus.CANCELING:
        backfill = backfill.with_status(BulkActionStatus.CANCELING)
        instance.update_backfill(backfill)
    return backfill.status.value


def run_queue_limits(instance: dg.DagsterInstance) -> tuple[int | None, list[RunLimit]]:
    """(max_concurrent_runs, tag limits) the instance's run queue enforces; (None, []) without a queue.

    ``DagsterInstance.get_concurrency_config`` is public on the instance but returns ``dagster._core`` records;
    only their plain fields are read here.
    """
    try:
        queue = instance.get_concurrency_config().run_queue_config
    except Exception:  # an instance without a queue (or a Dagster that changed this) gets the safe answer
        return None, []
    if queue is None:
        return None, []
    return queue.max_concurrent_runs, run_limits(queue.tag_concurrency_limits)


def enforces_one_run_per_tag_value(instance: dg.DagsterInstance, tag_key: str) -> bool:
    """Whether the instance's run queue runs at most one run per distinct value of ``tag_key``."""
    _, limits = run_queue_limits(instance)
    return any(limit.key == tag_key and limit.per_value and limit.limit == 1 for limit in limits)


def materialization_of_version(
    instance: dg.DagsterInstance, asset: str, partition: str, version_id: str, look_back: int = 5
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The target of a check evaluation that judged ``version_id``: the day's materialization carrying that version
    (among its latest ``look_back``; a concurrent publish may have landed after it), or None when there is none.

    ``AssetCheckResult`` computes it only in a single-partition step; this is the same record, built from the public
    ``fetch_materializations``, for the evaluations a multi-day step reports itself."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[partition]), limit=look_back
    ).records
    for record in records:
        value = record.asset_materialization.metadata.get("version_id") if record.asset_materialization else None
        if value is not None and value.value == version_id:
            return AssetCheckEvaluationTargetMaterializationData(
                storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
            )
    return None


def report_materialization_planned(
    instance: dg.DagsterInstance, run_id: str, job_name: str, step_key: str, asset: str, partition: str
) -> None:
    """Record that run ``run_id`` is about to materialize one day of ``asset``, as an asset job's run does at launch.

    Dagster derives a day's Failed status from a planned materialization whose run failed without materializing it
    (and In progress while the run goes on); an op job plans none, so a chunk run records one per day it gates."""
    event = DagsterEvent.build_asset_materialization_planned_event(
        job_name, step_key, AssetMaterializationPlannedData(dg.AssetKey(asset), partition=partition)
    )
    instance.report_dagster_event(event, run_id=run_id, log_level=logging.DEBUG)


# --- run launcher pieces -----------------------------------------------------------------------------------------

WORKER_RUNNING = WorkerStatus.RUNNING
WORKER_FAILED = WorkerStatus.FAILED


# What every run worker imports before its first step, imported by the warm worker before any fork so no run pays
# it. Dagster's private module paths: one renamed by an upgrade is skipped (a slower start, never a failure).
RUN_WORKER_MODULES = (
    "dagster._cli.api",
    "dagster._core.execution.api",
    "dagster._core.executor.in_process",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
    "dagster._core.storage.local_compute_log_manager",
    "sqlalchemy.dialects.sqlite",
    "alembic",
    # The PostgreSQL deployment, when installed.
    "dagster_postgres",
    "psycopg2",
    "sqlalchemy.dialects.postgresql",
)


def preload_run_worker_modules() -> list[str]:
    """Import ``RUN_WORKER_MODULES``; returns those that could not be imported."""
    import importlib

    missing = []
    for name in RUN_WORKER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def worker_health(running: bool, message: str | None = None) -> CheckRunHealthResult:
    """The answer run monitoring expects from ``RunLauncher.check_run_worker_health``."""
    return CheckRunHealthResult(WORKER_RUNNING if running else WORKER_FAILED, message)


def execute_run_args(run: dg.DagsterRun, instance: dg.DagsterInstance) -> str:
    """The serialized arguments of ``dagster api execute_run`` for ``run`` (what container launchers pass)."""
    from dagster._grpc.types import ExecuteRunArgs

    return dg.serialize_value(
        ExecuteRunArgs(job_origin=run.job_code_origin, run_id=run.run_id, instance_ref=instance.get_ref())
    )


def execute_run(execute_run_args_json: str) -> None:
    """Be ``dagster api execute_run <args>`` in this process: open the instance from its ref, run, report."""
    from dagster._cli.api import execute_run_command

    execute_run_command.callback(input_json=execute_run_args_json, compressed_input_json=None)


def execute_run_on(instance: dg.DagsterInstance, execute_run_args_json: str) -> None:
    """``execute_run`` on an instance this process already opened (a spare run worker opens it ahead of its run):
    the same body, interrupts captured the same way, the same exit code."""
    import sys

    from dagster._cli.api import _execute_run_command_body
    from dagster._grpc.types import ExecuteRunArgs
    from dagster._utils.interrupts import capture_interrupts

    with capture_interrupts(), instance:
        args = dg.deserialize_value(execute_run_args_json, ExecuteRunArgs)
        code = _execute_run_command_body(
            args.run_id, instance, lambda event: None, set_exit_code_on_failure=args.set_exit_code_on_failure or False
        )
    if code:
        sys.exit(code)


def reconstruct_repository(repository_origin) -> dg.RepositoryDefinition:
    """Load a code location's repository from a run's ``job_code_origin.repository_origin``, as a run worker does
    (same cached module import and definitions)."""
    from dagster._utils.hosted_user_process import recon_repository_from_origin

    return recon_repository_from_origin(repository_origin).get_definition()


def storage_modules_of(instance_ref) -> list[str]:
    """Module names of the classes an instance ref configures (storages, compute logs, launcher …): importing them
    ahead of time spares every run worker the import, without opening anything."""
    return sorted(
        {data.module_name for data in instance_ref if getattr(data, "module_name", None)}
    )


# --- the daemon's loops ------------------------------------------------------------------------------------------
# Dagster's daemon sleeps a fixed time between passes (sensors 5 s, backfills 30 s, the run queue its
# dequeue_interval_seconds) and exports no way to shorten a sleep when work arrives. ``backfill-assets-daemon``
# is ``dagster-daemon run`` itself (same options, daemons, heartbeats) with one change: those three loops wait on
# a ``Waker`` (``integration/runs/waker.py``) instead of the shutdown event alone, so a pass starts as soon as the
# waker sees new work. tests/e2e/test_woken_daemon.py runs real daemons through it.


# While a code location loads, how often the sensor loop looks again.
LOADING_RETRY_SECONDS = 0.25
# A pass scheduled for when a sensor's minimum interval ends comes this much later, so it is not still "under".
INTERVAL_MARGIN_SECONDS = 0.02


class WokenEvent:
    """What a daemon loop waits on between passes: ``wait`` returns at shutdown (True), when the waker fires for
    ``channel`` or at ``timeout`` (False); ``is_set`` is the shutdown event's."""

    def __init__(self, shutdown, waker, channel: str):
        self._shutdown, self._waker, self._channel = shutdown, waker, channel

    def wait(self, timeout: float | None = None) -> bool:
        return self._waker.wait(self._shutdown, timeout, self._channel)

    def is_set(self) -> bool:
        return self._shutdown.is_set()


def woken_daemons(instance: dg.DagsterInstance, waker) -> list:
    """The daemons ``dagster-daemon run`` would start on ``instance``, with the sensor, backfill and run queue
    loops waiting on ``waker``; the others are Dagster's own."""
    import sys

    from dagster._daemon.backfill import execute_backfill_iteration_loop
    from dagster._daemon.controller import create_daemon_of_type
    from dagster._daemon.daemon import BackfillDaemon, SensorDaemon, SpanMarker
    from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon
    from dagster._daemon.sensor import MIN_INTERVAL_LOOP_TIME, execute_sensor_iteration
    from dagster._utils.error import serializable_error_info_from_exc_info

    class WokenSensorDaemon(SensorDaemon):
        def core_loop(self, workspace_process_context, shutdown_event):
            woken, futures = WokenEvent(shutdown_event, waker, "sensor"), {}
            while True:  # execute_sensor_iteration_loop, its sleep made wakeable and each wake followed to the end
                started = time.monotonic()
                yield SpanMarker.START_SPAN
                try:
                    yield from execute_sensor_iteration(
                        workspace_process_context, self._logger,
                        threadpool_executor=self._threadpool_executor,
                        submit_threadpool_executor=self._submit_threadpool_executor,
                        sensor_tick_futures=futures, instrument_elapsed=self.instrument_elapsed,
                    )
                except Exception:
                    error_info = serializable_error_info_from_exc_info(sys.exc_info())
                    self._logger.error("SensorDaemon caught an error:\n%s", error_info)
                    yield error_info
                yield SpanMarker.END_SPAN
                waker.pass_finished("sensor", lambda since: sensors_pending_since(workspace_process_context, since))
                woken.wait(max(0.0, MIN_INTERVAL_LOOP_TIME - (time.monotonic() - started)))
                yield None

    class WokenBackfillDaemon(BackfillDaemon):
        def core_loop(self, workspace_process_context, shutdown_event):
            yield from execute_backfill_iteration_loop(
                workspace_process_context, self._logger, WokenEvent(shutdown_event, waker, "backfill"),
                threadpool_executor=self._threadpool_executor,
                submit_threadpool_executor=self._submit_threadpool_executor,
            )

    class WokenQueueDaemon(QueuedRunCoordinatorDaemon):
        def core_loop(self, workspace_process_context, shutdown_event):
            waker.daemon_started(workspace_process_context)
            woken = WokenEvent(shutdown_event, waker, "queue")
            while True:  # IntervalDaemon.core_loop, its sleep made wakeable
                yield SpanMarker.START_SPAN
                try:
                    yield from self.run_iteration(workspace_process_context)
                except Exception:
                    error_info = serializable_error_info_from_exc_info(sys.exc_info())
                    self._logger.error("Caught error:\n%s", error_info)
                    yield error_info
                yield SpanMarker.END_SPAN
                woken.wait(self.interval_seconds)
                yield None

    woken = {
        SensorDaemon.daemon_type(): lambda: WokenSensorDaemon(settings=instance.get_sensor_settings()),
        BackfillDaemon.daemon_type(): lambda: WokenBackfillDaemon(settings=instance.get_backfill_settings()),
        QueuedRunCoordinatorDaemon.daemon_type(): lambda: WokenQueueDaemon(
            interval_seconds=instance.run_coordinator.dequeue_interval_seconds
        ),
    }
    return [
        woken[kind]() if kind in woken else create_daemon_of_type(kind, instance)
        for kind in instance.get_required_daemon_types()
    ]


def sensors_pending_since(workspace_process_context, since: float, max_interval: float = 5.0) -> float | None:
    """None when every running sensor that the sensor daemon evaluates at least every ``max_interval`` s finished a
    tick without error that started at or after ``since`` (a wall-clock timestamp), i.e. acted on whatever was
    committed before it; otherwise the seconds until the next sensor pass can evaluate one that has not (its
    minimum interval since its last tick; ``LOADING_RETRY_SECONDS`` while a code location is still loading). A
    sensor that asks to be evaluated less often keeps its own cadence."""
    from dagster._core.scheduler.instigation import InstigatorType
    from dagster._core.workspace.workspace import CodeLocationLoadStatus

    entries = workspace_process_context.create_request_context().get_code_location_entries().values()
    if any(entry.load_status == CodeLocationLoadStatus.LOADING for entry in entries):
        return LOADING_RETRY_SECONDS
    instance = workspace_process_context.instance
    states = {
        state.selector_id: state for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
    }
    now, waits = time.time(), []
    for repository in _loaded_repositories(entries):
        for sensor in repository.get_sensors():
            state = sensor.get_current_instigator_state(states.get(sensor.selector_id))
            interval = sensor.min_interval_seconds or 0
            if sensor.sensor_type.is_handled_by_asset_daemon or not state.is_running or interval > max_interval:
                continue
            data = state.instigator_data
            # last_tick_timestamp: when the last finished tick started; no success stamp: that tick failed.
            if data is None or data.last_tick_success_timestamp is None or (data.last_tick_timestamp or 0) < since:
                last_start = max(data.last_tick_start_timestamp or 0, data.last_tick_timestamp or 0) if data else 0.0
                waits.append(last_start + interval + INTERVAL_MARGIN_SECONDS - now)
    return max(0.0, min(waits)) if waits else None


def run_dagster_daemon(make_daemons, args: list[str]) -> None:
    """Run ``dagster-daemon run ARGS`` in this process with the daemons ``make_daemons(instance)`` returns."""
    import functools

    from dagster._daemon import cli as daemon_cli

    controller = daemon_cli.daemon_controller_from_instance
    daemon_cli.daemon_controller_from_instance = functools.partial(controller, gen_daemons=make_daemons)
    daemon_cli.run_command.main(args=args, prog_name="backfill-assets-daemon run")


def active_backfill_count(instance: dg.DagsterInstance) -> int:
    """How many Dagster backfills are being carried out (REQUESTED or CANCELING)."""
    from dagster._core.execution.backfill import BulkActionsFilter

    return instance.get_backfills_count(BulkActionsFilter(statuses=sorted(ACTIVE, key=lambda s: s.value)))


def code_location_origins(workspace_process_context) -> list:
    """The repository origins of the workspace's loaded code locations (what a run's ``job_code_origin``
    names), to start their warm run workers before any run is queued."""
    entries = workspace_process_context.create_request_context().get_code_location_entries().values()
    return [repository.get_python_origin() for repository in _loaded_repositories(entries)]


def _loaded_repositories(entries) -> list:
    """The repositories of the code locations (workspace entries) that loaded."""
    return [
        repository
        for entry in entries
        if entry.code_location is not None
        for repository in entry.code_location.get_repositories().values()
    ]


# --- the embedded SQLite storage, reusing its engines -------------------------------------------------------------
# Dagster's SQLite event log creates (and disposes) a SQLAlchemy engine for every connection. SQLAlchemy caches a
# statement's compiled form per engine, so every event a step stores is compiled again: in a chunk run that is
# a fifth to two fifths of a gated asset-day's CPU (``python -m bench.micro.chunk_step``). This class keeps one
# engine per database file instead. The pool stays NullPool: a connection is still opened and closed per use, so nothing
# is shared between threads or held across the warm launcher's forks; only the compiled statements are kept.

# Engines kept per process: a run touches its own database and the index; a daemon or webserver reading many
# runs keeps the most recent ones (an engine without connections is a few kilobytes).
KEPT_ENGINES = 64


class SqliteEventLogReusingEngines(SqliteEventLogStorage):
    """Dagster's ``SqliteEventLogStorage`` (same files in the same place, same schema) with one engine per shard,
    kept. Configured with no directory: it takes the instance's own (``<instance>/history/runs``, where Dagster's
    default puts it) when the instance registers it, so a process opening an instance other than its
    DAGSTER_HOME's reads and writes that instance's files. dagster.yaml::

        event_log_storage:
          module: backfill_assets.integration.runs.dagster_adapter
          class: SqliteEventLogReusingEngines
    """

    def __init__(self, inst_data=None):
        # Dagster's constructor opens the directory (it indexes a new storage): it runs in register_instance,
        # once the instance's directory is known.
        self._engines: dict[str, object] = {}
        self._inst_data = inst_data

    def register_instance(self, instance) -> None:
        if not hasattr(self, "_base_dir"):
            SqliteEventLogStorage.__init__(
                self, os.path.join(instance.root_directory, "history", "runs", ""), inst_data=self._inst_data
            )
        super().register_instance(instance)

    @classmethod
    def config_type(cls):
        return {}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data)

    def _engine(self, shard: str):
        conn_string = self.conn_string_for_shard(shard)
        engine = self._engines.pop(conn_string, None)
        if engine is None:
            engine = create_engine(
                conn_string, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
            )
        self._engines[conn_string] = engine  # most recently used last
        while len(self._engines) > KEPT_ENGINES:
            self._engines.pop(next(iter(self._engines)))
        return engine

    @contextmanager
    def _connect(self, shard: str):
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn
