"""Which of a request's pending cells may run now, and which to skip because something before them did not
publish: an upstream cell of the request (same interval), or a depends-on-past asset's earlier interval. Pure
functions of the cells, shared by the driver's tick for one-interval, batch and chain groups."""

from __future__ import annotations

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import PREVIOUS_NOT_PUBLISHED, UPSTREAM_NOT_PUBLISHED, Cell
from backfill_assets.engine.model.graph import AssetGraph


def left_unpublished(cell: Cell | None) -> bool:
    """Skipped because something before it failed, as opposed to deliberately (already published, policy)."""
    return cell is not None and cell.left_unpublished


def readiness(
    graph: AssetGraph,
    group: list[Cell],
    cells: list[Cell],
    by_cell: dict[tuple[str, str], Cell],
    batch: bool = False,
) -> tuple[list[Cell] | None, list[tuple[Cell, str]]]:
    """Which cells of a group may be submitted now, in one run.

    An upstream cell of the same request must be published first unless it goes in the same run; one the
    request failed to publish leaves nothing new to compute from (the cell is skipped, and so is whatever
    reads it). In a per-interval group one waiting cell holds the whole group; in a batch group only that
    day's cells wait. Returns (None, ...) when a depends-on-past cell must wait for its previous interval
    (strict order), and the cells to skip because an earlier interval of a depends-on-past asset did not publish.
    """
    group = sorted(group, key=lambda c: (c.partition_key, graph.order_of(c.asset)))
    in_group = {c.key for c in group}
    waiting: set[tuple[str, str]] = set()
    not_published: set[tuple[str, str]] = set()
    ready: list[Cell] = []
    blocked: list[tuple[Cell, str]] = []
    for cell in group:
        asset, partition = cell.asset, cell.partition_key
        upstream = [(u, partition) for u in graph[asset].upstream]

        def state(key: tuple[str, str]) -> str | None:
            found = by_cell.get(key)
            return found.decision if found else None

        if any(k in not_published or state(k) in (M.REJECTED, M.FAILED) or left_unpublished(by_cell.get(k))
               for k in upstream):
            blocked.append((cell, UPSTREAM_NOT_PUBLISHED))
            not_published.add((asset, partition))
            continue
        if any(k in waiting or state(k) in M.IN_PROGRESS_CELLS or (state(k) == M.PENDING and k not in in_group)
               for k in upstream):
            if not batch:
                return [], blocked
            waiting.add((asset, partition))
            continue
        if graph[asset].depends_on_past:
            earlier = [c for c in cells if c.asset == asset and c.partition_key < partition]
            if any(c.decision in (M.PENDING, *M.IN_PROGRESS_CELLS) for c in earlier):
                return None, blocked
            failed = [c for c in earlier if c.decision not in M.SUCCESS_CELLS or left_unpublished(c)]
            if failed:
                blocked.append((cell, PREVIOUS_NOT_PUBLISHED.format(failed[-1].partition_key)))
                continue
        ready.append(cell)
    return ready, blocked


def chain_readiness(
    graph: AssetGraph, group: list[Cell], cells: list[Cell], by_cell: dict[tuple[str, str], Cell]
) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """A depends-on-past asset's pending days that may run now (consecutive, forward), and the days to skip.

    Nothing while a run of the asset is in flight: the next run's first day reads that run's last. Walking its
    days forward: a day after one that did not publish is skipped (``previous interval … not published``), and
    so is a day whose upstream this request failed to publish; the run ends before a day whose upstream cell of
    this request has not published yet, or before a day held back (a relaunch, a cascade to confirm)."""
    if not group:
        return [], []
    asset = group[0].asset
    in_group = {c.key for c in group}
    own = sorted((c for c in cells if c.asset == asset), key=lambda c: c.partition_key)
    if any(c.decision in M.IN_PROGRESS_CELLS for c in own):
        return [], []
    ready: list[Cell] = []
    blocked: list[tuple[Cell, str]] = []
    unpublished: str | None = None  # the latest earlier day that did not publish
    for cell in own:
        if cell.key not in in_group:
            if cell.decision == M.PENDING or ready:
                break  # held back, or the end of this run's consecutive days
            if cell.decision not in M.SUCCESS_CELLS or left_unpublished(cell):
                unpublished = cell.partition_key
            continue
        upstream = upstream_status(graph, cell, by_cell, in_group)
        if unpublished is not None or upstream == _NOT_PUBLISHED:
            reason = PREVIOUS_NOT_PUBLISHED.format(unpublished) if unpublished else UPSTREAM_NOT_PUBLISHED
            blocked.append((cell, reason))
            unpublished = cell.partition_key
            continue
        if upstream == _WAITING:
            break
        ready.append(cell)
    return ready, blocked


_NOT_PUBLISHED, _WAITING = "not published", "waiting"


def upstream_status(
    graph: AssetGraph, cell: Cell, by_cell: dict[tuple[str, str], Cell], in_group: set[tuple[str, str]]
) -> str | None:
    """Whether the cell's upstream cells of this request (same partition) failed to publish, are still to
    publish (pending outside ``in_group``, or submitted), or neither (published, skipped, or not in the request)."""
    upstream = [by_cell.get((u, cell.partition_key)) for u in graph[cell.asset].upstream]
    found = [u for u in upstream if u is not None]
    if any(u.decision in (M.REJECTED, M.FAILED) or left_unpublished(u) for u in found):
        return _NOT_PUBLISHED
    if any(u.decision in M.IN_PROGRESS_CELLS or (u.decision == M.PENDING and u.key not in in_group) for u in found):
        return _WAITING
    return None
