"""Pacing and order of a backfill launched from Dagster, applied when its runs are queued.

Dagster's backfill daemon queues the runs of such a backfill one after another; the run queue starts them by
``dagster/priority`` (highest first) within the instance's tag limits. Each run gets, at submit time:

- ``backfill/slot`` = ``<request id>/<n>`` with ``n = rank % max_active`` (``rank``: the run's place in the
  backfill's order). The instance runs one run per slot value at a time (the same limit that paces a request's
  driver), so at most ``max_active`` runs of the backfill are in flight, and a backfill of an asset whose days
  run one at a time (depends on the past, or ``parallel_days=False``) has a single slot.
- ``dagster/priority`` = the backfill lane's priority minus ``rank``: forward runs oldest first, ``backward``
  newest first, always below production runs. Without an order tag, the order its assets declare.
- ``backfill/lane`` = backfill: the lane limit keeps a slot free for production.
- ``backfill/request_id`` = ``dg-<backfill id>``: the adopted request's runs are found by the same tag filter
  as any request's (and the per-request backstop limit applies to them too).
- ``backfill/queue_hold`` = held, until every run before it in the order has been queued (``released_partitions``).
  The daemon queues runs oldest first while the queue dequeues concurrently, so without the hold the oldest
  run of a backward backfill could start before the newest was even queued.
"""

from __future__ import annotations

from typing import Collection, Iterable, Mapping, Sequence

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.plan.admission import launch_policy


def paced_policy(
    run_tags: Mapping[str, str], serial: bool, default_max_active: int, declared_order: str | None = None
) -> tuple[int, str]:
    """(slots, order) of the backfill: its tags', else what its assets declare (``serial``: one of them runs its
    days one at a time; ``declared_order``: the order they fix, None for any). A bad launch tag (unknown order,
    max_active out of range, one contradicting a declaration) paces with the defaults here: the run's steps refuse
    it with the tag's name, and nothing is computed."""
    try:
        policy = launch_policy(run_tags, default_max_active)
    except InvalidInput:
        policy = M.RequestSpec(assets=(), partitions=(), max_active=default_max_active)
    # A declared order wins over a tag contradicting it (whose steps refuse it anyway).
    order = declared_order or (policy.order if run_tags.get(T.ORDER) else M.Order.FORWARD)
    return (1 if serial else policy.max_active), order


def ordered_partitions(partitions: Collection[str], order: str) -> list[str]:
    return sorted(set(partitions), reverse=order == M.Order.BACKWARD)


def paced_order(
    run_tags: Mapping[str, str], partitions: Collection[str], serial: bool, default_max_active: int,
    declared_order: str | None = None,
) -> tuple[int, list[str]]:
    """(slots, the backfill's partitions in the order its runs start)."""
    slots, order = paced_policy(run_tags, serial, default_max_active, declared_order)
    return slots, ordered_partitions(partitions, order)


def pacing_tags(
    request_id: str,
    run_tags: Mapping[str, str],
    partition: str | None,
    partitions: Sequence[str],
    serial: bool,
    default_max_active: int,
    declared_order: str | None = None,
) -> dict[str, str]:
    """The tags that pace one run of the backfill ``request_id`` over ``partitions``; a run of one of its
    partitions starts held (any other has nothing to wait for)."""
    slots, ordered = paced_order(run_tags, partitions, serial, default_max_active, declared_order)
    rank = ordered.index(partition) if partition in ordered else 0
    tags = {
        T.REQUEST_ID: request_id,
        T.SLOT: f"{request_id}/{rank % slots}",
        T.LANE: T.LANE_BACKFILL,
        T.DAGSTER_PRIORITY: str(T.PRIORITY_BACKFILL - rank),
    }
    if partition in ordered:
        tags[T.QUEUE_HOLD] = T.HELD
    return tags


def released_partitions(ordered: Sequence[str], queued: Collection[str]) -> list[str]:
    """The partitions whose runs may leave the hold: those before the first one not queued yet, in order."""
    released = []
    for partition in ordered:
        if partition not in queued:
            break
        released.append(partition)
    return released


def declared_pacing(asset_tags: Iterable[Mapping[str, str]]) -> tuple[bool, str | None]:
    """(whether one of the assets runs its days one at a time, the order they fix or None) from their asset tags
    (``gated.day_order_tags``); opposite fixed orders pace forward, and the steps refuse whichever contradicts."""
    tags = list(asset_tags)
    serial = any(t.get(T.DEPENDS_ON_PAST) == "true" or t.get(T.PARALLEL_DAYS) == "false" for t in tags)
    fixed = {t.get(T.DAY_ORDER) for t in tags} - {None, "any"}
    return serial, (fixed.pop() if len(fixed) == 1 else None)
