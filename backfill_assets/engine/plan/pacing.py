"""Pacing and order of a backfill launched from Dagster, applied when its runs are queued.

Dagster's backfill daemon queues the runs of such a backfill one after another; the run queue starts them by
``dagster/priority`` (highest first) within the instance's tag limits. Each run gets, at submit time:

- ``backfill/slot`` = ``<request id>/<n>`` with ``n = rank % max_active`` (``rank``: the run's place in the
  backfill's order). The instance runs one run per slot value at a time (the same limit that paces a request's
  driver), so at most ``max_active`` runs of the backfill are in flight, and a depends-on-past backfill has a
  single slot: its intervals run one at a time, forward.
- ``dagster/priority`` = the backfill lane's priority minus ``rank``: forward runs oldest first, ``backward``
  newest first, always below production runs.
- ``backfill/lane`` = backfill: the lane limit keeps a slot free for production.
- ``backfill/request_id`` = ``dg-<backfill id>``: the adopted request's runs are found by the same tag filter
  as any request's (and the per-request backstop limit applies to them too).
- ``backfill/queue_hold`` = held, until every run before it in the order has been queued (``released_partitions``).
  The daemon queues runs oldest first while the queue dequeues concurrently, so without the hold the oldest
  run of a backward backfill could start before the newest was even queued.
"""

from __future__ import annotations

from typing import Collection, Mapping, Sequence

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.plan.admission import launch_policy


def paced_policy(run_tags: Mapping[str, str], serial: bool, default_max_active: int) -> tuple[int, str]:
    """(slots, order) of the backfill. A bad launch tag (unknown order, max_active out of range) paces with the
    defaults here: the run's steps refuse it with the tag's name, and nothing is computed."""
    try:
        policy = launch_policy(run_tags, default_max_active)
    except InvalidInput:
        policy = M.RequestSpec(assets=(), partitions=(), max_active=default_max_active)
    if serial:
        return 1, M.Order.FORWARD
    return policy.max_active, policy.order


def ordered_partitions(partitions: Collection[str], order: str) -> list[str]:
    return sorted(set(partitions), reverse=order == M.Order.BACKWARD)


def paced_order(
    run_tags: Mapping[str, str], partitions: Collection[str], serial: bool, default_max_active: int
) -> tuple[int, list[str]]:
    """(slots, the backfill's partitions in the order its runs start)."""
    slots, order = paced_policy(run_tags, serial, default_max_active)
    return slots, ordered_partitions(partitions, order)


def pacing_tags(
    request_id: str,
    run_tags: Mapping[str, str],
    partition: str | None,
    partitions: Sequence[str],
    serial: bool,
    default_max_active: int,
) -> dict[str, str]:
    """The tags that pace one run of the backfill ``request_id`` over ``partitions``; a run of one of its
    partitions starts held (any other has nothing to wait for)."""
    slots, ordered = paced_order(run_tags, partitions, serial, default_max_active)
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
