"""``backfill-assets-daemon``: Dagster's daemon loops woken by work instead of a timer."""

from __future__ import annotations

import time

import dagster as dg

from .backfills import ACTIVE

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
        def _dequeue_run(self, instance, workspace, run, *args, **kwargs):
            try:
                return super()._dequeue_run(instance, workspace, run, *args, **kwargs)
            except Exception:  # the storage failed mid-launch: the run may be left STARTING with no worker
                waker.launch_cut_short(run.run_id)
                raise

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
                waker.check_starting_runs()
                woken.wait(self.interval_seconds)
                yield None

    woken = {
        SensorDaemon.daemon_type(): lambda: WokenSensorDaemon(settings=instance.get_sensor_settings()),
        BackfillDaemon.daemon_type(): lambda: WokenBackfillDaemon(settings=instance.get_backfill_settings()),
        QueuedRunCoordinatorDaemon.daemon_type(): lambda: WokenQueueDaemon(
            interval_seconds=_dequeue_interval(instance)
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


def run_dagster_daemon(make_daemons, args: list[str], reload_seconds: float | None = None) -> None:
    """Run ``dagster-daemon run ARGS`` in this process with the daemons ``make_daemons(instance)`` returns; with
    ``reload_seconds``, its workspace reloads when the code changed (``workspace_reload.py``), not every minute."""
    import contextlib
    import functools

    from dagster._daemon import cli as daemon_cli

    from .workspace_reload import install_reload_on_change

    dagster_controller = functools.partial(daemon_cli.daemon_controller_from_instance, gen_daemons=make_daemons)

    @contextlib.contextmanager
    def controller(*controller_args, **kwargs):
        with dagster_controller(*controller_args, **kwargs) as made:
            if reload_seconds is not None:
                install_reload_on_change(made, reload_seconds)
            yield made

    daemon_cli.daemon_controller_from_instance = controller
    _code_servers_in_their_own_process_group()
    daemon_cli.run_command.main(args=args, prog_name="backfill-assets-daemon run")


def _code_servers_in_their_own_process_group() -> None:
    """Start the code servers of this daemon process in a process group of their own, as Dagster already does on
    Windows. A terminal's Ctrl-C goes to its whole foreground group: a code server in it stopped at once, and a
    sensor call the daemon made in the next instant failed with ``DagsterUserCodeUnreachableError`` logged with its
    traceback before the daemon's threads shut down. The daemon stops its code servers itself when it exits (their
    shutdown call), and each stops on its own within 20 s of the daemon's heartbeats ending (a daemon killed)."""
    import sys

    import dagster._grpc.server as grpc_server

    opened = grpc_server.open_ipc_subprocess
    if sys.platform == "win32" or getattr(opened, "in_own_process_group", False):
        return

    def open_in_own_process_group(parts, **kwargs):
        return opened(parts, process_group=0, **kwargs)

    open_in_own_process_group.in_own_process_group = True  # type: ignore[attr-defined]
    grpc_server.open_ipc_subprocess = open_in_own_process_group


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


# Dagster's daemon writes a heartbeat per daemon type every 30 s (DEFAULT_HEARTBEAT_INTERVAL_SECONDS) and leaves the
# last one behind when it stops: one newer than twice that, plus a margin, is a daemon still running.
HEARTBEAT_FRESH_SECONDS = 65.0


def daemon_heartbeat_after(instance: dg.DagsterInstance, after: float) -> tuple[str, float, str] | None:
    """The newest heartbeat any daemon process wrote on ``instance`` after the timestamp ``after`` (and within
    ``HEARTBEAT_FRESH_SECONDS``), as (daemon type, timestamp, daemon id), or None."""
    newest = None
    since = max(after, time.time() - HEARTBEAT_FRESH_SECONDS)
    for kind, beat in instance.get_daemon_heartbeats().items():
        if beat.timestamp > since and (newest is None or beat.timestamp > newest[1]):
            newest = (kind, beat.timestamp, beat.daemon_id or "?")
    return newest


def _dequeue_interval(instance: dg.DagsterInstance) -> float:
    """The run queue's interval (``run_coordinator.config.dequeue_interval_seconds``): dagster-daemon starts the
    queue's loop only for a ``QueuedRunCoordinator`` (ours, ``BackfillRunCoordinator``, is one)."""
    coordinator = instance.run_coordinator
    if not isinstance(coordinator, dg.QueuedRunCoordinator):
        raise dg.DagsterInvariantViolationError("the run queue's loop needs a QueuedRunCoordinator")
    return coordinator.dequeue_interval_seconds
