"""How a request's pending cells are cut into runs: per-interval groups, or (K > 1) a batch group cut into runs of
up to K consecutive days spread over the free run slots, and one chain per depends-on-past asset, cut into runs of
up to K consecutive days taken one after the other. Shared by the driver's tick and the dry run's planned runs, so
the dry run shows the runs the driver would make."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Callable

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellOrigin
from backfill_assets.engine.model.graph import AssetGraph

# What a group of pending cells is (``pending_groups``): how the driver turns it into runs.
INTERVAL = "interval"  # one interval's cells, one run
BATCH = "batch"  # every batchable asset's cells, runs of consecutive days side by side over the free slots
CHAIN = "chain"  # one depends-on-past asset's cells, runs of consecutive days one at a time, forward only


def chunk_size(batch_size: int, days: int, free_slots: int, max_active: int) -> int:
    """The days each run of a batch group takes: the group's days spread over the free slots (K, the request's
    ``partitions_per_run``, is the most days one run may take, not a quota to fill)."""
    return max(1, min(batch_size, -(-days // max(min(free_slots, max_active), 1))))


@dataclass(frozen=True)
class PlannedRun:
    """One run the driver would submit: its consecutive partitions and the assets it writes."""

    partitions: tuple[str, ...]
    assets: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.partitions[0] if len(self.partitions) == 1 else f"{self.partitions[0]}..{self.partitions[-1]}"


def planned_runs(graph: AssetGraph, spec: M.RequestSpec, creates: list[tuple[str, str]]) -> list[PlannedRun]:
    """The runs that would write ``creates`` (the cells the dry run would create, in submission order) if every
    one of the request's run slots were free and every run published: the chunking of ``tick`` step 3, for the dry
    run. Later ticks re-spread what is still pending over the slots then free, so the real runs can differ when
    some fail (a chain stops at its first day that does not publish)."""
    cells = [Cell("dry-run", asset, partition, n, CellOrigin.PLANNED, M.PENDING)
             for n, (asset, partition) in enumerate(creates)]
    max_active = spec.effective_max_active
    runs: list[PlannedRun] = []
    for group, kind in pending_groups(graph, cells, spec.partitions_per_run):
        days = len({c.partition_key for c in group})
        if kind == BATCH:
            chunks = contiguous_chunks(group, chunk_size(spec.partitions_per_run, days, max_active, max_active))
        elif kind == CHAIN:
            chunks = chain_chunks(group, spec.partitions_per_run)
        else:
            chunks = [group]
        for chunk in chunks:
            ordered = sorted(chunk, key=lambda c: c.ordinal)
            runs.append(PlannedRun(tuple(sorted({c.partition_key for c in ordered})),
                                   tuple(graph.topological(dict.fromkeys(c.asset for c in ordered)))))
    return runs


def pending_groups(graph: AssetGraph, cells: list[Cell], batch_size: int) -> list[tuple[list[Cell], str]]:
    """Groups of pending cells, each submitted as one or more runs, with its kind (INTERVAL, BATCH, CHAIN).

    One interval per run (K = 1): every pending asset of a partition, in request order. Batched (K > 1): first one
    group of every batchable asset's pending cells (cut into runs of consecutive days, all their assets
    together), then one chain per depends-on-past asset (its pending cells, in runs of consecutive days taken one
    after the other, each after the days it reads of the batch group have published), then the side-effect cells
    one interval at a time.
    """
    pending = [c for c in sorted(cells, key=lambda c: c.ordinal) if c.decision == M.PENDING]
    if batch_size <= 1:
        return [(g, INTERVAL) for g in by_partition(pending)]
    batchable_assets = graph.batchable_assets
    batchable = [c for c in pending if c.asset in batchable_assets]
    chains = [[c for c in pending if c.asset == asset] for asset in graph.chain_assets]
    singles = by_partition([c for c in pending if c.asset not in graph.chunk_assets])
    return (([(batchable, BATCH)] if batchable else []) + [(chain, CHAIN) for chain in chains if chain]
            + [(g, INTERVAL) for g in singles])


def chain_chunks(cells: list[Cell], size: int) -> list[list[Cell]]:
    """A depends-on-past asset's cells in runs of at most ``size`` consecutive days, forward whatever the
    request's order (each day reads the one before it)."""
    return contiguous_chunks(cells, size, order=lambda c: c.partition_key)


def by_partition(cells: list[Cell]) -> list[list[Cell]]:
    by_partition: dict[str, list[Cell]] = {}
    for cell in cells:
        by_partition.setdefault(cell.partition_key, []).append(cell)
    return list(by_partition.values())


def contiguous_chunks(
    cells: list[Cell], size: int, order: Callable[[Cell], str | int] = lambda c: c.ordinal
) -> list[list[Cell]]:
    """Cut into runs of at most ``size`` consecutive days (in request order unless ``order`` says otherwise),
    each with all its cells."""
    if not cells:
        return []
    days: dict[str, list[Cell]] = {}
    for cell in sorted(cells, key=order):
        days.setdefault(cell.partition_key, []).append(cell)
    chunks: list[list[str]] = []
    for day in days:
        if chunks and len(chunks[-1]) < size and adjacent(chunks[-1][-1], day):
            chunks[-1].append(day)
        else:
            chunks.append([day])
    return [[c for day in chunk for c in days[day]] for chunk in chunks]


def adjacent(a: str, b: str) -> bool:
    return abs((date.fromisoformat(a) - date.fromisoformat(b)).days) == 1
