"""The catalog's slots a step holds while it writes a day (``engine/store/target_slots.py``: leases, renewed while
held, a killed holder's expiring on its own):

- its target's, while it writes, audits and publishes, for an asset declared ``gated_asset(target=...)``: at most
  ``target_limits[target]`` steps at once;
- the backfill's one slot for the asset's days, while it computes too, for an asset declared
  ``parallel_days=False`` in a backfill launched from Dagster (the UI's dialog, `dagster job backfill`). The
  product's run coordinator queues such a backfill's runs on one slot; Dagster's own coordinator (a stock instance,
  Dagster+) starts them as they come, and several days of the asset were computed at once. With the slot they are
  computed one at a time on any instance, in the order the steps asked for it (a higher ``dagster/priority``
  first). A depends-on-past asset is held by ``previous_day.py`` instead (each day after the backfill's day
  before), and a request's days by its driver.

Neither can deadlock: a holder waits for nothing a waiting step holds. Its Dagster pool slot was taken before its
step began, and all it may wait for while holding a day slot is its target's slot, whose holders never wait for a
day slot (a step takes its day slot first).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import TargetBusy
from backfill_assets.engine.model.gates import validate_target_limits, validate_target_timing
from backfill_assets.engine.model.graph import DeclaredAsset
from backfill_assets.engine.plan.admission import is_launched_from_dagster
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.target_slots import SlotHolder, TargetSlots
from backfill_assets.engine.wap.target_lease import Lease, TargetQuota, write_slot
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.step_context import StepContext

# A hang detector, not a pace: the days before this one each take a step's time (run monitoring ends a run whose
# process died, and its lease expires).
WAIT_SECONDS = 6 * 3600.0
LEASE_SECONDS = 30.0


def run_priority(context: StepContext) -> int:
    """The run's ``dagster/priority`` (Dagster reads a bad one as 0 too)."""
    try:
        return int(context.run.tags.get(T.DAGSTER_PRIORITY, "0"))
    except ValueError:
        return 0


def day_slot_target(backfill_id: str, asset: str) -> str:
    """The catalog's slot name for one backfill's days of one asset: ``#`` starts no target a user can name."""
    return "#days:" + hashlib.sha256(f"{backfill_id}\0{asset}".encode()).hexdigest()[:32]


@contextmanager
def serial_day_slot(
    context: StepContext, spec: DeclaredAsset, catalog: Catalog, key: str, stopped: Callable[[], str | None]
) -> Iterator[Lease | None]:
    """Hold the backfill's one slot for ``spec``'s days while the body runs (None: nothing to hold, the asset's
    days may run at once or something else paces them); ``TargetBusy`` after ``WAIT_SECONDS`` without it. A run
    found stopped while it waits (``stopped``: why, or None) stops waiting: cancelled, it may not compute."""
    wait_seconds = WAIT_SECONDS  # read at each call: a test shortens it
    backfill_id = context.run.tags.get(T.DAGSTER_BACKFILL)
    if spec.parallel_days or spec.depends_on_past or not backfill_id or not is_launched_from_dagster(context.run.tags):
        yield None
        return
    slots = TargetSlots(catalog)
    quota = TargetQuota(day_slot_target(backfill_id, spec.name), 1, LEASE_SECONDS, wait_seconds)
    holders = slots.holders(quota.target)
    if holders:
        context.log.info(f"{spec.name} {key}: waiting for {holders[0].describe()} of this backfill to end: "
                         f"{spec.name} declares parallel_days=False, its days run one at a time")
    with ExitStack() as stack:
        try:
            lease = stack.enter_context(
                write_slot(slots, quota, SlotHolder(uuid.uuid4().hex, run_priority(context), context.run.run_id,
                                                    spec.name, key), sleep=_unless_stopped(stopped, spec.name, key))
            )
        except TargetBusy as exc:
            held = "; ".join(h.describe() for h in slots.holders(quota.target)) or "none live"
            raise TargetBusy(f"waited {wait_seconds:g} s for this backfill's other days of {spec.name} "
                             f"(parallel_days=False: one at a time), held by: {held}") from exc
        yield lease


def _unless_stopped(stopped: Callable[[], str | None], asset: str, key: str) -> Callable[[float], None]:
    """A waiting step's sleep, then why its run was stopped meanwhile, raised (a run marked cancelled whose worker
    no signal reached would otherwise wait for the slot, and hold its run slot, for hours)."""

    def sleep(seconds: float) -> None:
        time.sleep(seconds)
        if reason := stopped():
            raise dg.Failure(description=f"{asset} {key}: not attempted — {reason} (it was waiting for this "
                                         f"backfill's other days of {asset})", allow_retries=False)

    return sleep


def target_write_slot(
    context: StepContext, spec: DeclaredAsset, backfill: BackfillResource, key: str
) -> AbstractContextManager[Lease | None]:
    """A write slot of the asset's target (``gated_asset(target=...)``) for this day, or nothing to hold."""
    if spec.target is None:
        return nullcontext()
    limits = validate_target_limits(backfill.target_limits, {spec.name: spec.target})
    validate_target_timing(backfill.target_lease_seconds, backfill.target_wait_seconds)
    quota = TargetQuota(spec.target, limits[spec.target], backfill.target_lease_seconds, backfill.target_wait_seconds)
    who = SlotHolder(uuid.uuid4().hex, run_priority(context), context.run.run_id, spec.name, key)
    context.log.info(f"{spec.name} {key}: taking a write slot of target {spec.target} (limit {quota.limit})")
    return write_slot(TargetSlots(backfill.catalog()), quota, who)


def lease_guard(guard: Callable[[], str | None], lease: Lease | None) -> Callable[[], str | None]:
    """``guard``, then whether ``lease`` (a slot held while writing) was lost."""
    if lease is None:
        return guard
    return lambda: guard() or lease.lost()
