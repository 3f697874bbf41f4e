"""Which downstream partitions a changed partition affects, following the partition mappings of the domain."""

from __future__ import annotations

from typing import Callable

from backfill_assets.engine.model.graph import AssetGraph


def affected_downstream(
    graph: AssetGraph,
    asset: str,
    partition: str,
    newest_of: Callable[[str], str | None],
) -> list[tuple[str, str]]:
    """One hop: the cells that read ``asset`` ``partition`` directly, upstream before downstream, in order.

    Same-day mapping for ordinary assets; a depends-on-past asset is affected from the changed day through its
    newest published day (each day folds in the previous one). ``newest_of(asset)`` gives that newest day.
    """
    cells: list[tuple[str, str]] = []
    calendar = graph.calendar
    targets = graph.downstream_of(asset)
    if graph[asset].depends_on_past:
        targets = [asset, *targets]  # a cumulative asset's own next days read today's version
    for target in graph.topological(dict.fromkeys(targets)):
        if graph[target].depends_on_past:
            first = partition if target != asset else calendar.next_key(partition)
            newest = newest_of(target)
            if newest is None or newest < first:
                if target != asset:
                    cells.append((target, first))
                continue
            cells.extend((target, key) for key in calendar.keys_between(first, newest))
        else:
            cells.append((target, partition))
    return cells
