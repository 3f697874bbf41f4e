"""What the service needs from Dagster, declared here and implemented above it.

The service never imports Dagster or the integration (tests/engine/test_layering.py checks it, imports inside
functions included). Whoever builds a ``Backfills`` hands it a ``DagsterPort``: the integration's
``integration/dagster_port.InstancePort`` over a Dagster instance (``backfills_for_instance``, the CLI, the
sensors and the Launchpad jobs), or a test's own fake. A ``Backfills`` without one works on the catalog alone;
an operation that must ask Dagster then fails naming what it needed (``ServiceContext.require_dagster``).

The code location's own definitions (a clear's asset selection, the resources ``register``'s audits open) are not
Dagster's instance: they reach the service as the context's ``select_assets`` and ``resources_of`` callables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.model.states import RunStatus
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.request_cells import RequestCells
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import PointerMove, Version
from backfill_assets.engine.store.tries import RunTouch

if TYPE_CHECKING:  # the gate imports pandas: the port only names its outcome
    from backfill_assets.engine.wap.gate import GateOutcome


@dataclass(frozen=True)
class RequestRunFacts:
    """What Dagster knows of a request's runs, for reconcile: each run's status (Dagster's name: SUCCESS,
    FAILURE, CANCELED, ...), the version ids its materializations carry, and the runs marked cancelled without their
    worker's confirmation."""

    run_statuses: Mapping[str, RunStatus] = field(default_factory=dict)
    materialized_version_ids: frozenset[str] = frozenset()
    forced_cancels: frozenset[str] = frozenset()


@dataclass(frozen=True)
class StoppedRequestRuns:
    """A cancel's stop: the runs Dagster confirmed stopped, and those marked cancelled without an answer."""

    terminated: tuple[str, ...] = ()
    forced: tuple[str, ...] = ()


@dataclass(frozen=True)
class DrivenNow:
    """One driver tick done by the operation's own process: the run keys of the runs it queued (the driver sensor's
    own keys), or why it left the request to the sensor's next pass (``left_to_sensor``, empty when it ticked)."""

    run_keys: tuple[str, ...] = ()
    left_to_sensor: str = ""


class DagsterPort(Protocol):
    """The Dagster instance, as the service's operations ask of it. Every answer is the engine's or the service's
    own record; nothing of Dagster's types crosses."""

    # ---- the deployment: its run queue and its daemon ----------------------------------------------------------

    def queue_limits(self) -> QueueLimits:
        """What the instance's run queue lets runs execute at once, and where that is set."""

    def wake_daemon(self) -> None:
        """A hint to the daemon that there is new work (a request made, resumed, confirmed, a cascade)."""

    def drive_now(self, graph: AssetGraph, catalog: Catalog, request_id: str) -> DrivenNow:
        """One driver tick for the request, in this process: the runs the driver sensor would submit now (its run
        keys, tags, config and job), queued through the instance's run coordinator, so they need not wait for the
        daemon's next pass over its sensors. The tick records its decisions as the sensor's does, so of the two at
        the same moment one submits. Never raises: what cannot be done here is left to the sensor."""

    # ---- facts about runs --------------------------------------------------------------------------------------

    def cell_facts(
        self, graph: AssetGraph, catalog: Catalog, cells: Sequence[tuple[str, str]]
    ) -> Callable[[str, str], CellFacts]:
        """``facts_of(asset, partition)`` for ``cells``: the catalog's latest versions with Dagster's runs in
        flight and failed (what the dry run decides on)."""

    def request_run_facts(self, catalog: Catalog, request_id: str, read: RequestCells | None = None
                          ) -> RequestRunFacts:
        """Dagster's facts about a request's runs and its cells' materializations (what reconcile compares);
        ``read``: the request's cells and overrides the caller has read for the same reconcile (else read here)."""

    def cell_runs(self, graph: AssetGraph, asset: str, partition_key: str) -> list[RunTouch]:
        """Every Dagster run that was to write the cell, oldest first (a cell's tries)."""

    # ---- stopping runs -----------------------------------------------------------------------------------------

    def cancel_backfill(self, backfill_id: str) -> str | None:
        """Ask Dagster to cancel its backfill (an adopted request's); its status now, None if Dagster has none."""

    def stop_request_runs(
        self, catalog: Catalog, request_id: str, submitted: list[Cell], side_effects: frozenset[str],
        terminate_timeout: float | None,
    ) -> StoppedRequestRuns:
        """Stop a cancelled request's queued and running runs (each code server waited for at most
        ``terminate_timeout`` seconds; None: the default) and settle its ``submitted`` cells."""

    # ---- telling Dagster what happened outside its runs --------------------------------------------------------

    def record_materialization(self, version: Version) -> None:
        """Record a published version's materialization Dagster lost (reconcile's repair)."""

    def record_rollback(self, catalog: Catalog, move: PointerMove, reason: str) -> str:
        """Tell Dagster of a rollback's pointer move; returns the kind of event recorded."""

    def record_override(self, catalog: Catalog, move: PointerMove, record: Override) -> str:
        """Tell Dagster of an accept's or a reject's pointer move; returns the kind of event recorded."""

    def record_registration(self, outcome: GateOutcome, record: Override) -> str:
        """Tell Dagster of a registered file (published or rejected); returns the kind of event recorded."""
