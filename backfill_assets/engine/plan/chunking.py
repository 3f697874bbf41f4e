"""How a request's pending cells are cut into runs: per-interval groups, or (K > 1) batch groups cut into runs of
up to K consecutive days spread over the free run slots. Shared by the driver's tick and the dry run's planned
runs, so the dry run shows the runs the driver would make."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellOrigin
from backfill_assets.engine.model.graph import AssetGraph


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
    one of the request's run slots were free: the chunking of ``tick`` step 3, for the dry run. Later ticks
    re-spread what is still pending over the slots then free, so the real runs can differ when some fail."""
    cells = [Cell("dry-run", asset, partition, n, CellOrigin.PLANNED, M.PENDING)
             for n, (asset, partition) in enumerate(creates)]
    max_active = spec.effective_max_active
    runs: list[PlannedRun] = []
    for group, batch in pending_groups(graph, cells, spec.partitions_per_run):
        days = len({c.partition_key for c in group})
        size = chunk_size(spec.partitions_per_run, days, max_active, max_active) if batch else days
        for chunk in contiguous_chunks(group, size):
            ordered = sorted(chunk, key=lambda c: c.ordinal)
            runs.append(PlannedRun(tuple(sorted({c.partition_key for c in ordered})),
                                   tuple(graph.topological(dict.fromkeys(c.asset for c in ordered)))))
    return runs


def pending_groups(graph: AssetGraph, cells: list[Cell], batch_size: int) -> list[tuple[list[Cell], bool]]:
    """Groups of pending cells, each submitted as one or more runs, with whether it is a batch group.

    One interval per run: every pending asset of a partition, in request order. Batched (K > 1): first one
    group of every batchable asset's pending cells (cut into runs of consecutive days, all their assets
    together), then the depends-on-past and side-effect cells one interval at a time.
    """
    pending = [c for c in sorted(cells, key=lambda c: c.ordinal) if c.decision == M.PENDING]
    if batch_size > 1:
        batchable_assets = graph.batchable_assets
        batchable = [c for c in pending if c.asset in batchable_assets]
        singles = by_partition([c for c in pending if c.asset not in batchable_assets])
        return ([(batchable, True)] if batchable else []) + [(g, False) for g in singles]
    return [(g, False) for g in by_partition(pending)]


def by_partition(cells: list[Cell]) -> list[list[Cell]]:
    by_partition: dict[str, list[Cell]] = {}
    for cell in cells:
        by_partition.setdefault(cell.partition_key, []).append(cell)
    return list(by_partition.values())


def contiguous_chunks(cells: list[Cell], size: int) -> list[list[Cell]]:
    """Cut into runs of at most ``size`` consecutive days (in request order), each with all its cells."""
    if not cells:
        return []
    days: dict[str, list[Cell]] = {}
    for cell in sorted(cells, key=lambda c: c.ordinal):
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
