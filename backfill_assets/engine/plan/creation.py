"""Creating a request, for every surface (``request create``, the Launchpad's ``backfill_request`` job): one
validation and one create, so both promise the same. The dry run needs Dagster's view of in-flight runs and
lives beside the driver (``integration/request_planning.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.concurrency import Concurrency, RunLimit, effective_concurrency
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger, RequestRecord


@dataclass(frozen=True)
class QueueLimits:
    """The run queue's limits a request is measured against, and where they come from (for the message)."""

    max_concurrent_runs: int | None
    limits: list[RunLimit]
    source: str

    def concurrency(self, spec: M.RequestSpec) -> Concurrency:
        """What the run queue lets the request execute at once (its max_active, or less, and why)."""
        tags = {T.LANE: T.LANE_BACKFILL, T.REQUEST_ID: "this request"}
        return effective_concurrency(
            spec.effective_max_active, tags, self.max_concurrent_runs, self.limits, self.source
        )


def build_request(graph: AssetGraph, **options: Any) -> M.RequestSpec:
    """Validate a request's options (``request create``'s, by name) into a frozen spec; raises InvalidInput or
    PlanError with the one-line message every surface shows."""
    return M.build_spec(graph, graph.calendar.newest_complete_key(utc_now()), **options)


def create_request(
    graph: AssetGraph, catalog: Catalog, spec: M.RequestSpec, code_version: str, source: str
) -> RequestRecord:
    """Freeze the request in the ledger (claims, cells, code version); the driver sensor carries it out."""
    return Ledger(catalog).create(
        M.new_request_id(utc_now()), spec, code_version, spec.excluded_cells(graph), source=source
    )
