"""What is true of a request's cells now, for the driver's submit-time decision and the dry run: the newest
version in the catalog, Dagster's in-flight runs and per-partition failures."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.integration.assets.partitions import daily_partitions_for
from backfill_assets.integration.runs.runs import in_flight_cells


def latest_states(catalog: Catalog, cells: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(asset, partition) → (state, version id) of the newest version, for the reprocess decision."""
    latest: dict[tuple[str, str], tuple[str, str]] = {}
    for v in catalog.versions_of_partitions(p for _, p in cells):  # oldest first within a cell
        latest[(v.asset, v.partition_key)] = (v.state, v.version_id)
    return latest


def failed_partitions(
    graph: AssetGraph, instance: dg.DagsterInstance, cells: list[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Cells whose latest Dagster run failed (or was cancelled) without materializing, from Dagster's own
    per-partition status (one cached lookup per asset, not one run query per cell)."""
    by_asset: dict[str, list[str]] = {}
    for asset, partition in cells:
        by_asset.setdefault(asset, []).append(partition)
    failed: set[tuple[str, str]] = set()
    for asset, partitions in by_asset.items():
        statuses = instance.get_status_by_partition(
            dg.AssetKey(asset), partitions, daily_partitions_for(graph.calendar)
        ) or {}
        failed.update((asset, p) for p, status in statuses.items() if status == dg.AssetPartitionStatus.FAILED)
    return failed


def cell_facts_source(
    graph: AssetGraph, catalog: Catalog, instance: dg.DagsterInstance, cells: list[tuple[str, str]]
):
    latest = latest_states(catalog, cells)
    flying = in_flight_cells(instance, graph)
    failed = failed_partitions(graph, instance, cells)

    def facts_of(asset: str, partition: str) -> CellFacts:
        state, version_id = latest.get((asset, partition), (None, None))
        return CellFacts(state, version_id, flying.get((asset, partition)), (asset, partition) in failed)

    return facts_of
