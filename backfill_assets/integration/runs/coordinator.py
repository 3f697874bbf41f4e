"""The run coordinator of the product's ``dagster.yaml``: Dagster's ``QueuedRunCoordinator``, plus pacing and
order for the runs of backfills launched from Dagster (the UI's dialog, the asset graph, ``dagster job backfill``).

Configured as any run coordinator::

    run_coordinator:
      module: backfill_assets.integration.runs.coordinator
      class: BackfillRunCoordinator
      config:
        dequeue_interval_seconds: 1
        default_max_active: 2

Every option of ``QueuedRunCoordinator`` is accepted (the queue's limits may stay in ``concurrency.runs``).
When such a run is submitted, it is tagged with its slot, lane and priority (``engine/plan/pacing.py``) before
it joins the queue; the queue's ``backfill/slot`` limit (one run per value) then does the pacing. Runs of our
own requests are paced by their driver and pass through unchanged.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Mapping

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.gates import team_of_request
from backfill_assets.engine.model.request_model import MAX_ACTIVE_LIMIT
from backfill_assets.engine.plan.admission import (
    DEFAULT_LAUNCH_MAX_ACTIVE,
    adopted_request_id,
    is_launched_from_dagster,
)
from backfill_assets.engine.plan.pacing import declared_pacing, paced_order, pacing_tags, released_partitions
from backfill_assets.integration.runs.dagster_adapter import (
    backfill_partitions,
    workspace_asset_owners,
    workspace_asset_tags,
)
from backfill_assets.integration.runs.waker import current_waker

DEFAULT_MAX_ACTIVE_FIELD = "default_max_active"
# A backfill's target never changes: remembered for the next runs it submits (a few backfills at a time).
REMEMBERED_BACKFILLS = 32
# A held run whose predecessors were never queued is released after this long (the adoption sensor's job).
HOLD_FALLBACK_SECONDS = 30.0

# Tags of runs submitted by the daemon (sensor, schedule, backfill daemon), which the same daemon launches.
DAEMON_SUBMITTED_TAGS = (T.DAGSTER_BACKFILL, T.DAGSTER_SENSOR, T.DAGSTER_SCHEDULE)

logger = logging.getLogger("backfill_assets.run_coordinator")

# False while a process that is not the daemon queues a run the daemon will launch (``submitted_elsewhere``).
_PREWARM_HERE: ContextVar[bool] = ContextVar("prewarm_here", default=True)


@contextmanager
def submitted_elsewhere() -> Iterator[None]:
    """Runs submitted inside are queued for the daemon to launch, although they carry a sensor's tags
    (``request create``'s own driver tick): this process starts no warm run worker for them."""
    token = _PREWARM_HERE.set(False)
    try:
        yield
    finally:
        _PREWARM_HERE.reset(token)



class BackfillRunCoordinator(dg.QueuedRunCoordinator):
    """Queues runs as ``QueuedRunCoordinator`` does; paces and orders the runs of Dagster-launched backfills."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.default_max_active = DEFAULT_LAUNCH_MAX_ACTIVE
        self._partitions: OrderedDict[str, list[str]] = OrderedDict()

    @classmethod
    def config_type(cls):
        return {
            **super().config_type(),
            DEFAULT_MAX_ACTIVE_FIELD: dg.Field(
                int,
                is_required=False,
                default_value=DEFAULT_LAUNCH_MAX_ACTIVE,
                description="Runs at once of one backfill launched from Dagster without a backfill/max_active tag.",
            ),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value: Mapping[str, Any]):
        queued_config = {k: v for k, v in config_value.items() if k != DEFAULT_MAX_ACTIVE_FIELD}
        coordinator = super().from_config_value(inst_data, queued_config)
        default_max_active = config_value.get(DEFAULT_MAX_ACTIVE_FIELD, DEFAULT_LAUNCH_MAX_ACTIVE)
        if not 1 <= default_max_active <= MAX_ACTIVE_LIMIT:
            raise ValueError(
                f"run_coordinator {DEFAULT_MAX_ACTIVE_FIELD}: {default_max_active} must be between 1 and "
                f"{MAX_ACTIVE_LIMIT}"
            )
        coordinator.default_max_active = default_max_active
        return coordinator

    def submit_run(self, context: dg.SubmitRunContext) -> dg.DagsterRun:
        try:
            return self._submit(context)
        finally:
            waker = current_waker()
            if waker is not None:  # in backfill-assets-daemon: the run queue dequeues it now, not at its next pass
                waker.notify()

    def _submit(self, context: dg.SubmitRunContext) -> dg.DagsterRun:
        run = context.dagster_run
        self._prewarm(run)
        if run.status != dg.DagsterRunStatus.NOT_STARTED or not is_launched_from_dagster(run.tags):
            return super().submit_run(context)
        try:
            ordered, tags = self._pacing(context)
        except Exception:  # pacing is an optimisation of the queue: never lose the run over it
            logger.exception("could not pace run %s; it is queued without its backfill slot", run.run_id)
            return super().submit_run(context)
        self._instance.add_run_tags(run.run_id, tags)
        tagged = self._instance.get_run_by_id(run.run_id) or run  # the run with its pacing tags
        queued = super().submit_run(context._replace(dagster_run=tagged))
        release_held_runs(self._instance, run.tags[T.DAGSTER_BACKFILL], ordered)
        return self._instance.get_run_by_id(queued.run_id) or queued

    def _prewarm(self, run: dg.DagsterRun) -> None:
        """Let a warm run launcher start importing the run's code location while the run waits in the queue.
        Only for runs the daemon submits (sensors, schedules, backfills), which the same daemon will launch: a
        webserver or CLI process that merely queues a run must not keep a warm worker of its own."""
        if not _PREWARM_HERE.get() or not any(key in run.tags for key in DAEMON_SUBMITTED_TAGS):
            return
        prewarm = getattr(self._instance.run_launcher, "prewarm", None)
        if prewarm is not None:
            try:
                prewarm(run)
            except Exception:  # an optimisation: the launch itself starts the worker, or falls back
                logger.exception("could not prewarm the run worker of run %s", run.run_id)

    def _pacing(self, context: dg.SubmitRunContext) -> tuple[list[str], dict[str, str]]:
        """The backfill's order and this run's pacing tags."""
        run = context.dagster_run
        backfill_id = run.tags[T.DAGSTER_BACKFILL]
        if backfill_id not in self._partitions:
            self._partitions[backfill_id] = backfill_partitions(
                self._instance, backfill_id, context.workspace.asset_graph
            )
            while len(self._partitions) > REMEMBERED_BACKFILLS:
                self._partitions.popitem(last=False)
        partitions = self._partitions[backfill_id]
        asset_tags = workspace_asset_tags(context.workspace, run.asset_selection or ())
        serial, declared = declared_pacing(asset_tags.values())
        partition = run.tags.get(T.DAGSTER_PARTITION)
        tags = pacing_tags(
            adopted_request_id(backfill_id), run.tags, partition, partitions, serial, self.default_max_active,
            declared,
        )
        # Charged to a team like a request's runs, so the run queue's per-team limit holds for UI backfills too.
        tags[T.TEAM] = team_of_request(workspace_asset_owners(context.workspace, run.asset_selection or ()))
        _, ordered = paced_order(run.tags, partitions, serial, self.default_max_active, declared)
        return ordered, tags


def release_held_runs(instance: dg.DagsterInstance, backfill_id: str, ordered: list[str] | None) -> int:
    """Release the backfill's held runs whose predecessors in ``ordered`` are all queued (all of them when
    ``ordered`` is None: the fallback for a partition Dagster never queues). Returns how many were released."""
    runs = instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id}))
    if ordered is None:
        free = None
    else:
        with_runs = {r.tags[T.DAGSTER_PARTITION] for r in runs if T.DAGSTER_PARTITION in r.tags}
        free = set(released_partitions(ordered, with_runs))
    released = 0
    for run in runs:
        if run.tags.get(T.QUEUE_HOLD) != T.HELD or run.status != dg.DagsterRunStatus.QUEUED:
            continue
        if free is None or run.tags.get(T.DAGSTER_PARTITION) in free:
            instance.add_run_tags(run.run_id, {T.QUEUE_HOLD: T.RELEASED})
            released += 1
    return released


def release_stale_holds(instance: dg.DagsterInstance, backfill_id: str, now: float) -> int:
    """Release every held run of the backfill once one of them has waited ``HOLD_FALLBACK_SECONDS``: Dagster
    never queued a run before it in the order (it may skip a partition whose upstream failed), or a release was
    lost. Held is read from each run's own tags, which the queue reads, not from the tag index: Dagster's
    ``add_run_tags`` rewrites a run's whole tag set, so a writer that read the run before our release wrote
    ``held`` back into the run while the index kept ``released`` (seen when a test tagged a run being released)."""
    records = instance.get_run_records(
        dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id}, statuses=[dg.DagsterRunStatus.QUEUED])
    )
    held = [r for r in records if r.dagster_run.tags.get(T.QUEUE_HOLD) == T.HELD]
    if not any(now - r.create_timestamp.timestamp() >= HOLD_FALLBACK_SECONDS for r in held):
        return 0
    return release_held_runs(instance, backfill_id, None)


def paced_max_active(instance: dg.DagsterInstance) -> int | None:
    """The default max_active the instance's run coordinator paces Dagster-launched backfills with; None when
    the instance is configured with another coordinator (their runs are then not paced per backfill)."""
    coordinator = instance.run_coordinator
    return coordinator.default_max_active if isinstance(coordinator, BackfillRunCoordinator) else None
