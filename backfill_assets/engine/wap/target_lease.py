"""Holding a write slot of a target while a step writes, audits and publishes (``engine/store/target_slots.py``).

The step polls for a slot (production ahead of backfills, by priority), up to ``wait_seconds``: it already holds
its Dagster pool slot, so it must not wait for ever. It cannot deadlock: a holder never waits for anything else
(pool slots are taken before the step's body starts, and a holder only writes, audits and publishes), so every
lease ends — released, or expired when its worker dies. While held, a thread renews the lease every third of
``lease_seconds``; a lease found lost (the worker stalled past its expiry and another step took the slot) is
reported by ``lost``, which the gate asks before it publishes.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from backfill_assets.engine.model.errors import TargetBusy
from backfill_assets.engine.store.target_slots import SlotHolder, TargetSlots

# Polls start quick (a slot often frees within a step's time) and slow down to this.
MAX_POLL_SECONDS = 2.0


@dataclass(frozen=True)
class TargetQuota:
    target: str
    limit: int
    lease_seconds: float = 30.0
    wait_seconds: float = 600.0


class Lease:
    def __init__(self, slots: TargetSlots, quota: TargetQuota, slot: int, holder: str):
        self.slots, self.quota, self.slot, self.holder = slots, quota, slot, holder
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_until_stopped, name=f"lease-{quota.target}", daemon=True)

    def lost(self) -> str | None:
        """Why this lease no longer counts (so the step may not publish under it), or None."""
        return self._lost

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.quota.lease_seconds / 3):
            try:
                if not self.slots.renew(self.quota.target, self.slot, self.holder, self.quota.lease_seconds):
                    self._lost = (f"its write slot {self.slot} of target {self.quota.target} expired and was taken "
                                  "by another step (the lease was not renewed in time)")
                    return
            except Exception:  # the catalog unreachable for a moment: the next renewal tries again
                continue

    def start(self) -> None:
        self._thread.start()

    def end(self) -> None:
        self._stop.set()
        self._thread.join()
        self.slots.release(self.quota.target, self.slot, self.holder)


def _wait_for_slot(
    slots: TargetSlots, quota: TargetQuota, who: SlotHolder, clock: Callable[[], float], sleep: Callable[[float], None]
) -> int:
    # A waiter's place in the queue lasts lease_seconds from its last poll: poll well within it.
    deadline, poll, max_poll = clock() + quota.wait_seconds, 0.05, min(MAX_POLL_SECONDS, quota.lease_seconds / 3)
    try:
        while (slot := slots.try_acquire(quota.target, quota.limit, who, quota.lease_seconds)) is None:
            if clock() >= deadline:
                holders = "; ".join(h.describe() for h in slots.holders(quota.target)) or "none live"
                raise TargetBusy(
                    f"waited {quota.wait_seconds:g} s for a write slot of target {quota.target} (limit "
                    f"{quota.limit}), held by: {holders}"
                )
            sleep(poll)
            poll = min(poll * 2, max_poll)
    except BaseException:
        slots.leave_queue(quota.target, who.holder)
        raise
    return slot


@contextmanager
def write_slot(
    slots: TargetSlots,
    quota: TargetQuota,
    who: SlotHolder,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[Lease]:
    """Wait for a slot of ``quota.target`` (at most ``quota.wait_seconds``, else ``TargetBusy``), hold it."""
    slot = _wait_for_slot(slots, quota, who, clock, sleep)
    lease = Lease(slots, quota, slot, who.holder)
    lease.start()
    try:
        yield lease
    finally:
        lease.end()
