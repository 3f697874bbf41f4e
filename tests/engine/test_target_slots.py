"""Write-target quotas in the catalog (SQLite and PostgreSQL): at most ``limit`` holders at once, production's
waiters ahead of backfills', a killed holder's slot freed by its lease's expiry, a waiter that never gets a slot
fails saying who holds them."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from backfill_assets.engine.model.errors import TargetBusy
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store.target_slots import SlotHolder, TargetSlots
from backfill_assets.engine.wap.target_lease import TargetQuota, write_slot

TARGET = "warehouse_x"
PRODUCTION, BACKFILL = 10, -5


def _who(name: str, priority: int = BACKFILL) -> SlotHolder:
    return SlotHolder(name, priority, f"run-{name}", "orders", "2022-09-01")


def test_at_most_limit_holders_and_a_released_slot_is_taken_again(catalog):
    slots = TargetSlots(catalog)
    assert slots.try_acquire(TARGET, 2, _who("a"), 30) == 0
    assert slots.try_acquire(TARGET, 2, _who("b"), 30) == 1
    assert slots.try_acquire(TARGET, 2, _who("c"), 30) is None
    assert [h.holder for h in slots.holders(TARGET)] == ["a", "b"]
    slots.release(TARGET, 0, "a")
    assert slots.try_acquire(TARGET, 2, _who("c"), 30) == 0
    # Another target has its own slots.
    assert slots.try_acquire("warehouse_y", 1, _who("d"), 30) == 0


def test_a_killed_holders_slot_frees_when_its_lease_expires(catalog):
    slots = TargetSlots(catalog)
    now = utc_now()
    assert slots.try_acquire(TARGET, 1, _who("killed"), 5, now=now) == 0  # never renewed, never released
    assert slots.try_acquire(TARGET, 1, _who("next"), 5, now=now + timedelta(seconds=4)) is None
    assert slots.try_acquire(TARGET, 1, _who("next"), 5, now=now + timedelta(seconds=6)) == 0
    # The dead holder's late renewal finds its lease gone: it must not publish under it.
    assert not slots.renew(TARGET, 0, "killed", 5)
    assert slots.renew(TARGET, 0, "next", 5)


def test_production_waiting_takes_the_freed_slot_before_backfills_that_waited_longer(catalog):
    slots = TargetSlots(catalog)
    assert slots.try_acquire(TARGET, 1, _who("holder"), 30) == 0
    assert slots.try_acquire(TARGET, 1, _who("backfill-1"), 30) is None
    assert slots.try_acquire(TARGET, 1, _who("backfill-2"), 30) is None
    assert slots.try_acquire(TARGET, 1, _who("production", PRODUCTION), 30) is None
    slots.release(TARGET, 0, "holder")
    assert slots.try_acquire(TARGET, 1, _who("backfill-1"), 30) is None  # production is ahead of it
    assert slots.try_acquire(TARGET, 1, _who("production", PRODUCTION), 30) == 0
    slots.release(TARGET, 0, "production")
    # Among equals, first come first served.
    assert slots.try_acquire(TARGET, 1, _who("backfill-2"), 30) is None
    assert slots.try_acquire(TARGET, 1, _who("backfill-1"), 30) == 0


def test_a_waiter_that_stopped_polling_does_not_block_the_queue(catalog):
    slots = TargetSlots(catalog)
    now = utc_now()
    assert slots.try_acquire(TARGET, 1, _who("holder"), 5, now=now) == 0
    assert slots.try_acquire(TARGET, 1, _who("gone", PRODUCTION), 5, now=now) is None  # then its worker died
    slots.release(TARGET, 0, "holder")
    assert slots.try_acquire(TARGET, 1, _who("backfill"), 5, now=now + timedelta(seconds=1)) is None
    assert slots.try_acquire(TARGET, 1, _who("backfill"), 5, now=now + timedelta(seconds=6)) == 0


def test_holders_racing_for_the_slots_never_exceed_the_limit(catalog):
    limit, inside, peak, lock = 2, [0], [0], threading.Lock()
    quota = TargetQuota(TARGET, limit, lease_seconds=30, wait_seconds=60)
    # Holders stay until the slots have been full once: the peak reaches the limit however slowly threads start
    # on a loaded machine (a fixed hold of 50 ms let one holder leave before the next came in).
    full = threading.Event()

    def step(n: int) -> None:
        with write_slot(TargetSlots(catalog), quota, _who(f"step-{n}")):
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
                if inside[0] == limit:
                    full.set()
            full.wait(timeout=20)
            threading.Event().wait(0.05)
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=step, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] == limit
    assert TargetSlots(catalog).holders(TARGET) == []


def test_a_step_that_never_gets_a_slot_fails_naming_the_holders_and_leaves_the_queue(catalog):
    slots = TargetSlots(catalog)
    assert slots.try_acquire(TARGET, 1, _who("holder"), 30) == 0
    ticks = iter(range(100))
    quota = TargetQuota(TARGET, 1, lease_seconds=30, wait_seconds=3)
    with pytest.raises(TargetBusy, match=r"waited 3 s for a write slot of target warehouse_x \(limit 1\), held by: "
                                         r"orders 2022-09-01 \(run run-holder"):
        with write_slot(slots, quota, _who("waiter", PRODUCTION), clock=lambda: next(ticks), sleep=lambda _: None):
            pass
    # It left the queue: a backfill behind it is not kept waiting by a production step that gave up.
    slots.release(TARGET, 0, "holder")
    assert slots.try_acquire(TARGET, 1, _who("backfill"), 30) == 0


def test_a_held_lease_is_renewed_and_released(catalog):
    slots = TargetSlots(catalog)
    quota = TargetQuota(TARGET, 1, lease_seconds=0.3, wait_seconds=5)
    with write_slot(slots, quota, _who("long-writer")) as lease:
        threading.Event().wait(0.8)  # longer than the lease: renewed meanwhile
        assert lease.lost() is None
        assert slots.try_acquire(TARGET, 1, _who("other"), 0.3) is None
    assert slots.holders(TARGET) == []


HOLDER_SCRIPT = """
import sys, time
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.target_slots import SlotHolder, TargetSlots
from backfill_assets.engine.wap.target_lease import TargetQuota, write_slot

quota = TargetQuota("warehouse_x", 1, lease_seconds=1.0, wait_seconds=30)
with write_slot(TargetSlots(Catalog(sys.argv[1])), quota, SlotHolder("doomed", -5, "run-doomed", "orders", "d")):
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_worker_killed_while_holding_a_slot_frees_it_when_its_lease_expires(catalog):
    import os
    import signal
    import subprocess
    import sys
    import time

    worker = subprocess.Popen([sys.executable, "-c", HOLDER_SCRIPT, catalog.url], stdout=subprocess.PIPE,
                              env=dict(os.environ), text=True)
    try:
        assert worker.stdout.readline().strip() == "held"
        slots = TargetSlots(catalog)
        assert [h.holder for h in slots.holders(TARGET)] == ["doomed"]
        os.kill(worker.pid, signal.SIGKILL)  # no release, no more renewals
        worker.wait(10)
        killed_at = time.monotonic()
        quota = TargetQuota(TARGET, 1, lease_seconds=1.0, wait_seconds=20)
        with write_slot(slots, quota, _who("next")):
            waited = time.monotonic() - killed_at
            assert [h.holder for h in slots.holders(TARGET)] == ["next"]
    finally:
        worker.kill()
        worker.wait(10)
    assert waited < 5.0, waited  # the lease's expiry (1 s) plus polling, far from the wait bound (20 s)
