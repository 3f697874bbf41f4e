"""What every operation of the service works with: the code location's graph, the catalog, the Dagster instance
(opened on first use), the run queue's limits, the daemon's wake-up, and the surface calling."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.store.catalog import Catalog

if TYPE_CHECKING:
    import dagster as dg


@dataclass(frozen=True)
class ServiceContext:
    """``source``: the surface calling (``python``, ``cli``, ``launchpad``); every request it creates records it.
    ``instance_of`` opens Dagster's instance (only dry runs and cancels talk to Dagster); ``queue_limits_of``
    says what the run queue lets a request execute at once; ``wake`` hints the daemon that there is new work."""

    graph: AssetGraph
    catalog: Catalog
    instance_of: Callable[[], dg.DagsterInstance]
    queue_limits_of: Callable[[], QueueLimits]
    wake: Callable[[], None]
    source: M.RequestSource = M.RequestSource.PYTHON

    def code_version(self) -> str:
        """The code version a request created now freezes (the package and the code location's files)."""
        return code_version(location_files=self.graph.code_files())
