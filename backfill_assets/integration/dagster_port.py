"""The service's ``DagsterPort`` (``service/ports.py``) over a Dagster instance: each question the service asks
answered by the integration's modules for it, in the engine's and the service's records."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.request_cells import RequestCells
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import PointerMove, Version
from backfill_assets.engine.store.tries import RunTouch
from backfill_assets.engine.store.wakeup import wake_daemon
from backfill_assets.integration.runs.cancel import terminate_request_runs
from backfill_assets.integration.runs.cell_facts import cell_facts_source
from backfill_assets.integration.runs.cell_runs import runs_touching_cell
from backfill_assets.integration.runs.dagster_adapter import cancel_backfill, run_queue_limits
from backfill_assets.integration.runs.reconcile_facts import record_lost_materialization, request_run_facts
from backfill_assets.service.ports import DagsterPort, DrivenNow, RequestRunFacts, StoppedRequestRuns

if TYPE_CHECKING:  # the gate imports pandas: the port only names its outcome
    from backfill_assets.engine.wap.gate import GateOutcome

# Where the limits come from when the instance's own run queue is read (a dagster.yaml path otherwise).
INSTANCE_QUEUE = "the instance's run queue"

# A driver tick done in this process (``runs/direct_tick.DirectTick``): instance, graph, catalog, request id.
DriveNow = Callable[[dg.DagsterInstance, AssetGraph, Catalog, str], DrivenNow]
NOT_LOADED = "this process has not imported the code location as a module"

logger = logging.getLogger("backfill_assets.dagster_port")


class InstancePort(DagsterPort):
    """A Dagster instance as the service asks of it. ``instance_of`` opens it, on the first question only (the CLI's
    commands that ask Dagster nothing never open it); ``home`` is the Dagster home whose daemon a wake-up hints;
    ``queue_limits`` the run queue's limits when the caller read them itself (the CLI, from dagster.yaml), else
    they are the instance's own; ``drive`` does a request's driver tick in this process (None: left to the
    daemon's sensor)."""

    def __init__(
        self, instance_of: Callable[[], dg.DagsterInstance], home: Path | str | None,
        queue_limits: QueueLimits | None = None, limits_from: str = INSTANCE_QUEUE, drive: DriveNow | None = None,
    ):
        self._drive = drive
        self._instance_of = instance_of
        self._instance: dg.DagsterInstance | None = None
        self._home = home
        self._queue_limits = queue_limits
        self._limits_from = limits_from  # how a concurrency note names where the limits are set

    @classmethod
    def of(cls, instance: dg.DagsterInstance, drive: DriveNow | None = None) -> InstancePort:
        """An instance already open: its home is its root directory, its limits its run queue's."""
        return cls(lambda: instance, instance.root_directory, drive=drive)

    @property
    def instance(self) -> dg.DagsterInstance:
        if self._instance is None:
            self._instance = self._instance_of()
        return self._instance

    def queue_limits(self) -> QueueLimits:
        if self._queue_limits is not None:
            return self._queue_limits
        return QueueLimits(*run_queue_limits(self.instance), self._limits_from)

    def wake_daemon(self) -> None:
        wake_daemon(self._home)

    def drive_now(self, graph: AssetGraph, catalog: Catalog, request_id: str) -> DrivenNow:
        if self._drive is None:
            return DrivenNow(left_to_sensor=NOT_LOADED)
        try:
            driven = self._drive(self.instance, graph, catalog, request_id)
        except Exception as exc:  # noqa: BLE001 - the sensor submits what this tick could not; create succeeded
            logger.debug("request %s left to the driver sensor", request_id, exc_info=True)
            return DrivenNow(left_to_sensor=f"{type(exc).__name__}: {exc}")
        if driven.run_keys:
            self.wake_daemon()  # a woken run queue dequeues them now (the wake-up of the create came before them)
        return driven

    def cell_facts(
        self, graph: AssetGraph, catalog: Catalog, cells: Sequence[tuple[str, str]]
    ) -> Callable[[str, str], CellFacts]:
        return cell_facts_source(graph, catalog, self.instance, list(cells))

    def request_run_facts(self, catalog: Catalog, request_id: str, read: RequestCells | None = None
                          ) -> RequestRunFacts:
        return request_run_facts(self.instance, catalog, request_id, read)

    def cell_runs(self, graph: AssetGraph, asset: str, partition_key: str) -> list[RunTouch]:
        return runs_touching_cell(self.instance, graph, asset, partition_key)

    def cancel_backfill(self, backfill_id: str) -> str | None:
        return cancel_backfill(self.instance, backfill_id)

    def stop_request_runs(
        self, catalog: Catalog, request_id: str, submitted: list[Cell], side_effects: frozenset[str],
        terminate_timeout: float | None,
    ) -> StoppedRequestRuns:
        # None keeps terminate_request_runs' own default deadline for each code server.
        bounds = {} if terminate_timeout is None else {"terminate_timeout": terminate_timeout}
        outcome = terminate_request_runs(self.instance, catalog, request_id, submitted, side_effects=side_effects,
                                         **bounds)
        return StoppedRequestRuns(tuple(outcome.terminated), tuple(outcome.forced))

    def record_materialization(self, version: Version) -> None:
        record_lost_materialization(self.instance, version)

    # The three reports below import the gate's records, and with them pandas (~0.6 s): imported when one is made,
    # not by every command that opens the port (reconcile and the dry run never make one).

    def record_rollback(self, catalog: Catalog, move: PointerMove, reason: str) -> str:
        from backfill_assets.integration.assets.dashboard import report_rollback

        return report_rollback(self.instance, catalog, move, reason)

    def record_override(self, catalog: Catalog, move: PointerMove, record: Override) -> str:
        from backfill_assets.integration.assets.override_events import report_override

        return report_override(self.instance, catalog, move, record)

    def record_registration(self, outcome: GateOutcome, record: Override) -> str:
        from backfill_assets.integration.assets.registration_events import report_registration

        return report_registration(self.instance, outcome, record)
