"""The service for ``request create`` (and ``request show``, ``request list``) without Dagster: the code location's
snapshot (``location_cache.py``) and, for a create, a ``backfill-assets-daemon`` watching this home, whose driver
sensor queues the request's first runs as soon as the create wakes it (``runs/waker.py``: the wake-up file is read
every 50 ms). Nothing here imports Dagster, but ``instance_service``: the service of ``reconcile`` and the dry run,
which ask Dagster's instance about runs (its storage, opened from the home) and nothing of the code location but
its graph's shape, so they too run on the snapshot without importing the code location.

A create uses it only when both hold: a snapshot that still describes the code location, and the daemon's lease on
the catalog live and held for this home (``engine/store/daemon_lease.py``). Otherwise the command loads the code
location and ticks the driver itself (``runs/direct_tick.py``), as under Dagster's own daemon, whose sensors a
wake-up does not reach.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.request_cells import RequestCells
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.daemon_lease import DaemonLease
from backfill_assets.engine.store.wakeup import wake_daemon, wakeup_path
from backfill_assets.integration.location_cache import recall
from backfill_assets.service import Backfills
from backfill_assets.service.context import ServiceContext
from backfill_assets.service.ports import DrivenNow, RequestRunFacts

WOKEN = "backfill-assets-daemon's driver sensor, woken by the create"


class SnapshotPort:
    """The Dagster port of a service on a snapshot: the run queue's limits as the snapshot recorded them, the
    wake-up (a create leaves its first tick to the watching daemon), and no question to Dagster's instance."""

    def __init__(self, home: Path, limits: QueueLimits):
        self._home, self._limits = home, limits

    def queue_limits(self) -> QueueLimits:
        return self._limits

    def wake_daemon(self) -> None:
        wake_daemon(self._home)

    def drive_now(self, graph: AssetGraph, catalog: Catalog, request_id: str) -> DrivenNow:
        return DrivenNow(left_to_sensor=WOKEN)  # the create's own wake-up, after its commit, is what the daemon answers

    def cell_facts(self, graph: AssetGraph, catalog: Catalog,
                   cells: Sequence[tuple[str, str]]) -> Callable[[str, str], CellFacts]:
        _refuse("the dry run")

    def request_run_facts(self, catalog: Catalog, request_id: str, read: RequestCells | None = None
                          ) -> RequestRunFacts:
        _refuse("reconcile")

    def __getattr__(self, name: str) -> NoReturn:  # every other question needs Dagster's instance
        _refuse(name)


def _refuse(what: str) -> NoReturn:
    raise InvalidInput(f"{what} needs Dagster's instance: this service was built for request create alone")


def daemon_watches(catalog: Catalog, home: Path) -> bool:
    """A live ``backfill-assets-daemon`` lease for this home, and its wake-up file there to touch."""
    lease = DaemonLease(catalog).current()
    return (lease is not None and lease.live(utc_now()) and wakeup_path(home).exists()
            and os.path.realpath(lease.who.instance) == os.path.realpath(home))


def snapshot_service(home: Path, module: str, cwd: Path, user: str) -> Backfills | None:
    """The service on the code location's snapshot, for the operations that read the catalog and the graph's shape
    alone (``request show``, ``request list``): None without a snapshot that still describes the code location."""
    snapshot = recall(home, module, cwd)
    if snapshot is None:
        return None
    return Backfills(ServiceContext(
        graph=snapshot.graph, catalog=Catalog.of_settings(Settings.from_env()),
        dagster=SnapshotPort(home, snapshot.queue_limits),  # type: ignore[arg-type]
        source=M.RequestSource.CLI, user=user,
    ))


def create_service(home: Path, module: str, cwd: Path, user: str) -> Backfills | None:
    """The service ``request create`` can freeze a request with, without importing Dagster or the code location;
    None when a snapshot or a watching daemon is missing (the caller loads the code location)."""
    quick = snapshot_service(home, module, cwd, user)
    if quick is None or not daemon_watches(quick.catalog, home):
        return None
    return quick


def instance_service(home: Path, module: str, cwd: Path, user: str) -> Backfills | None:
    """The service on the code location's snapshot with Dagster's instance of ``home`` as its port, for the
    operations that ask Dagster about runs and materializations (``reconcile``, the dry run): the facts come from
    the instance's storage, which needs Dagster but not the code location. None without a snapshot that still
    describes the code location (the caller loads it)."""
    snapshot = recall(home, module, cwd)
    if snapshot is None:
        return None
    # Imported here: the commands of the module's other services never import Dagster.
    import dagster as dg

    from backfill_assets.integration.dagster_port import InstancePort

    # The instance as the loaded code location's service opens it (``service_wiring.backfills_for_home``), on the
    # first question; the run queue's limits are the snapshot's, read from this home's dagster.yaml, which is part
    # of the snapshot's key.
    port = InstancePort(dg.DagsterInstance.get, home, snapshot.queue_limits, limits_from=snapshot.queue_limits.source)
    return Backfills(ServiceContext(
        graph=snapshot.graph, catalog=Catalog.of_settings(Settings.from_env()), dagster=port,
        source=M.RequestSource.CLI, user=user,
    ))
