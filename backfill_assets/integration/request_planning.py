"""The dry run of a request: each cell's decision as the driver would take it now, from the catalog and
Dagster's in-flight runs (shared by ``request create --dry-run`` and the Launchpad's ``backfill_request``)."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.plan.planning import decide
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.integration.runs.cell_facts import cell_facts_source


def dry_run(graph: AssetGraph, catalog: Catalog, instance: dg.DagsterInstance, spec: M.RequestSpec) -> list[dict]:
    """Each cell's decision in submission order; writes nothing."""
    cells = [(a, p) for p in spec.ordered_partitions() for a in spec.assets]
    facts_of = cell_facts_source(graph, catalog, instance, cells)
    plan = []
    for asset, partition in cells:
        decision = decide(spec, graph[asset], facts_of(asset, partition))
        plan.append({"asset": asset, "partition_key": partition, "action": decision.action, "reason": decision.reason})
    return plan
