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
from backfill_assets.engine.plan.chunking import planned_runs
from backfill_assets.engine.plan.planning import CREATE
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


def chunking(graph: AssetGraph, spec: M.RequestSpec, plan: list[dict]) -> dict[str, Any]:
    """The dry run's runs: the request's K, how it was chosen, and the runs that would write the cells ``plan``
    (the dry run's decisions) creates, each with its first and last interval and its assets."""
    creates = [(row["asset"], row["partition_key"]) for row in plan if row["action"] == CREATE]
    return {
        "partitions_per_run": spec.partitions_per_run,
        "partitions_per_run_mode": spec.partitions_per_run_mode,
        "runs": [
            {"first": run.partitions[0], "last": run.partitions[-1], "intervals": len(run.partitions),
             "assets": list(run.assets)}
            for run in planned_runs(graph, spec, creates)
        ],
    }


def describe_chunking(chunks: dict[str, Any], shown: int = 8) -> list[str]:
    """Two lines for people: K and why, then the runs (``2 runs: 2022-09-01..2022-09-10, …``)."""
    k = chunks["partitions_per_run"]
    runs = chunks["runs"]
    labels = [r["first"] if r["first"] == r["last"] else f"{r['first']}..{r['last']}" for r in runs]
    listed = ", ".join(labels[:shown]) + (f", … and {len(labels) - shown} more" if len(labels) > shown else "")
    return [
        f"partitions per run: {k} ({chunks['partitions_per_run_mode']})",
        f"{len(runs)} run(s): {listed}" if runs else "0 runs: nothing to create",
    ]


def create_request(
    graph: AssetGraph, catalog: Catalog, spec: M.RequestSpec, code_version: str, source: str
) -> RequestRecord:
    """Freeze the request in the ledger (claims, cells, code version); the driver sensor carries it out."""
    return Ledger(catalog).create(
        M.new_request_id(utc_now()), spec, code_version, spec.excluded_cells(graph), source=source
    )
