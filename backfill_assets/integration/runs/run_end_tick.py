"""A request's driver tick done by its run's own process when the run ends: the next runs of the request (the next
day of a depends-on-past chain, the run for a freed slot) are queued at once, instead of at the daemon's next pass
over the driver sensor (Dagster's own daemon: every ~5 s, so a chain run one day per run waited ~5 s per day).

Where: the data jobs' executor (``ticking_executor``) wraps whichever executor runs their steps (in the run's
process, Celery, ...). The executor is the one part of a run that runs in the run's own process whatever launched
it (Dagster's ``DefaultRunLauncher``: ``dagster api execute_run``; the warm run launcher's forked worker; a
Kubernetes job), and it knows when the run's last step is done. The run's status is written by Dagster only after
the executor returns, and the driver settles a run only once it has ended, so a thread started there waits for the
run's final status (a poll of the run's row), its tick made ready meanwhile, and then does the tick
``request create`` does (``direct_tick.DirectTick``, for the module the run was loaded from), its runs tagged
``backfill/queued_by`` with the run's id. Dagster's own ``dagster api execute_run`` joins the thread before its
process exits; the warm worker's forked child, which leaves by ``os._exit``, joins it with ``join_run_end_ticks``.

Who may: only a run the driver created for a request (``backfill/request_id`` and the driver's sensor tag), only
once it ended SUCCESS or FAILURE (a failure is settled as the sensor settles it: a depends-on-past chain's later
days are skipped, never submitted); a run cancelled or being terminated leaves the request to the sensor. Under
``backfill-assets-daemon`` (its lease is live in the catalog) nothing is done here: the run's end wakes that
daemon's driver sensor, which is as quick. Nothing is submitted twice: the tick is the sensor's, recorded by
compare-and-swap on the request's tick token, and a run key that has a run is never created again. Anything that
fails here is only logged: the sensor is the backstop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store.daemon_lease import DaemonLease
from backfill_assets.engine.store.wakeup import wake_daemon
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.direct_tick import run_module_tick
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from backfill_assets.integration.sensors.evaluation import SensorResource

logger = logging.getLogger("backfill_assets.run_end_tick")

TICKED_AFTER = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE)
ENDED = (*TICKED_AFTER, dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.CANCELING)
# How often the run's row is read for its final status (written by the same process just after the last step).
POLL_SECONDS = 0.02
# A run whose status is not final this long after its last step is left to the sensor.
END_TIMEOUT_SECONDS = 60.0
# How long a forked run worker waits for its tick before it exits (the sensor does what is left undone).
JOIN_TIMEOUT_SECONDS = 120.0

_pending: list[threading.Thread] = []
_pending_lock = threading.Lock()


def ticking_executor(inner: dg.ExecutorDefinition, graph: AssetGraph,
                     backfill: BackfillResource) -> dg.ExecutorDefinition:
    """``inner`` (same name, config and requirements: the jobs' snapshots are unchanged) whose executor, once a
    request's run has run its steps, ticks the request's driver when the run has ended."""
    create = inner.executor_creation_fn
    if create is None:
        return inner
    resource = SensorResource(backfill)

    def create_ticking(init_context: dg.InitExecutorContext) -> dg.Executor:
        return TickingExecutor(create(init_context), graph, resource)

    # The schema as ``inner`` holds it (Dagster's own ``configured`` copies it so): its type is not the one typed.
    return dg.ExecutorDefinition(
        name=inner.name, config_schema=inner.config_schema,  # type: ignore[arg-type]
        requirements=inner.get_requirements,
        executor_creation_fn=create_ticking, description=inner.description,
    )


class TickingExecutor(dg.Executor):
    """Runs the steps with ``inner``; after them, ``start_run_end_tick`` for the run."""

    def __init__(self, inner: dg.Executor, graph: AssetGraph, resource: SensorResource):
        self._inner = inner
        self._graph = graph
        self._resource = resource

    def execute(self, plan_context: Any, execution_plan: Any) -> Iterator[Any]:
        yield from self._inner.execute(plan_context, execution_plan)
        # Only after every step: an interrupt or an executor's crash raises through here and ticks nothing.
        start_run_end_tick(plan_context.instance, plan_context.dagster_run, self._graph, self._resource)

    @property
    def retries(self) -> Any:
        return self._inner.retries

    @property
    def step_dependency_config(self) -> Any:
        return self._inner.step_dependency_config

    def get_step_event_or_retry_event(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.get_step_event_or_retry_event(*args, **kwargs)

    def log_failure_or_retry_event_after_error(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.log_failure_or_retry_event_after_error(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # anything else an executor of Dagster's is asked
        if name == "_inner":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self._inner, name)


def start_run_end_tick(instance: dg.DagsterInstance, run: dg.DagsterRun, graph: AssetGraph,
                       resource: SensorResource) -> threading.Thread | None:
    """Start the thread that ticks ``run``'s request once the run has ended, if the run is a request's run the
    driver created and its code was loaded from a module; returns it (None: left to the sensor)."""
    request_id = run.tags.get(T.REQUEST_ID)
    if not request_id or run.tags.get(T.DAGSTER_SENSOR) != DRIVER_SENSOR or instance.is_ephemeral:
        return None
    tick = run_module_tick(run, queued_by=run.run_id)
    if tick is None:
        return None
    ref = instance.get_ref()

    def tick_when_ended() -> None:
        try:
            catalog = resource.get().catalog()
            lease = DaemonLease(catalog).current()
            if lease is not None and lease.live(utc_now()):
                return  # backfill-assets-daemon is woken by the run's end: its driver sensor ticks
            # An instance of its own: the run's is closed by Dagster when the run ends, while this waits. The tick
            # is prepared (its code location loaded) while Dagster writes the run's end, so the driver's decisions
            # follow the end at once: the sensor's next pass rarely comes first.
            with dg.DagsterInstance.from_ref(ref) as own, tick.prepare(own, graph) as prepared:
                status = _final_status(own, run.run_id)
                if status not in TICKED_AFTER:
                    return
                driven = prepared.drive(catalog, request_id)
                if driven.run_keys:
                    wake_daemon(own.root_directory)
                logger.debug("run %s ended %s: %s", run.run_id, status, driven)
        except Exception:  # noqa: BLE001 - the driver sensor submits what this tick could not
            logger.debug("run %s: its request left to the driver sensor", run.run_id, exc_info=True)

    thread = threading.Thread(target=tick_when_ended, name=f"run-end-tick-{run.run_id[:8]}")
    with _pending_lock:
        _pending.append(thread)
    thread.start()
    return thread


def _final_status(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRunStatus | None:
    deadline = time.monotonic() + END_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run is None:
            return None
        if run.status in ENDED:
            return run.status
        time.sleep(POLL_SECONDS)
    return None


def join_run_end_ticks(timeout: float = JOIN_TIMEOUT_SECONDS) -> None:
    """Wait for this process's run-end ticks: a process that leaves without its interpreter's shutdown (a forked
    run worker's ``os._exit``) calls it first; Python's own shutdown joins them anyway."""
    deadline = time.monotonic() + timeout
    with _pending_lock:
        threads, _pending[:] = list(_pending), []
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
