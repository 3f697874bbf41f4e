"""What is true of cells now: for a request's cells (the driver's submit-time decision and the dry run) the newest
version in the catalog, Dagster's in-flight runs and per-partition failures, and the cells' skip marks; for the
production trigger, the current (published) version and the in-flight runs."""

from __future__ import annotations

from typing import Callable

import dagster as dg

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.overrides import skip_mark_reason
from backfill_assets.engine.plan.catchup import CellNow
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.integration.assets.partitions import daily_partitions_for
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.runs.runs import in_flight_cells

# Bounded IN lists: SQLite limits bound parameters per statement.
_POINTER_CHUNK = 500


def latest_states(catalog: Catalog, cells: list[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
    """(asset, partition) → (state, version id) of the newest version, for the reprocess decision."""
    return catalog.newest_states_of_cells(cells)


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
            asset_key(asset), partitions, daily_partitions_for(graph.calendar)
        ) or {}
        failed.update((asset, p) for p, status in statuses.items() if status == dg.AssetPartitionStatus.FAILED)
    return failed


def cell_facts_source(
    graph: AssetGraph,
    catalog: Catalog,
    instance: dg.DagsterInstance,
    cells: list[tuple[str, str]],
    window: int | None = None,
) -> Callable[[str, str], CellFacts]:
    """``facts_of(asset, partition)`` for ``cells``. Without ``window``, every cell's facts are read at once (the dry
    run asks for all of them). With ``window`` (the driver), they are read when first asked: the asked cell and the
    cells after it in ``cells``' order, ``window`` of them, the window doubling on each read, so a tick that decides
    nothing reads nothing and one that decides a few cells reads a few cells' facts, in a few queries."""
    order = list(cells)
    position = {cell: n for n, cell in enumerate(order)}
    known: dict[tuple[str, str], CellFacts] = {}

    def read(batch: list[tuple[str, str]]) -> None:
        latest = latest_states(catalog, batch)
        flying = in_flight_cells(instance, graph, {p for _, p in batch})
        # ``decide`` consults a failed run only for a cell without a version: Dagster is asked about those alone.
        failed = failed_partitions(graph, instance, [c for c in batch if c not in latest])
        marks = catalog.skip_marks(batch)
        for cell in batch:
            state, version_id = latest.get(cell, (None, None))
            mark = skip_mark_reason(marks[cell]) if cell in marks else None
            known[cell] = CellFacts(state, version_id, flying.get(cell), cell in failed, skip_mark=mark)

    size = window
    if size is None:
        read(order)

    def facts_of(asset: str, partition: str) -> CellFacts:
        nonlocal size
        cell = (asset, partition)
        if cell not in known:
            start = position.get(cell)
            batch = [cell] if start is None else order[start : start + (size or 1)]
            read([c for c in batch if c not in known])
            size = (size or 1) * 2
        return known[cell]

    return facts_of


def production_facts(
    graph: AssetGraph, catalog: Catalog, instance: dg.DagsterInstance, cells: list[tuple[str, str]]
) -> dict[tuple[str, str], CellNow]:
    """(asset, partition) → whether the cell has a published version and which queued or running run (any source)
    will write it, for ``cells``: one pointer query per asset and chunk of days, one in-flight read."""
    by_asset: dict[str, list[str]] = {}
    for asset, partition in cells:
        by_asset.setdefault(asset, []).append(partition)
    published: set[tuple[str, str]] = set()
    for asset, partitions in by_asset.items():
        for start in range(0, len(partitions), _POINTER_CHUNK):
            published.update((asset, p) for p in catalog.current_many(asset, partitions[start:start + _POINTER_CHUNK]))
    flying = in_flight_cells(instance, graph, {p for _, p in cells})
    return {cell: CellNow(cell in published, flying.get(cell)) for cell in cells}
