"""Write-target quotas in the catalog: at most ``limit`` holders write to a target at once (docs/OPERATIONS.md,
"Gates").

A slot is a row ``(target, slot)`` with ``slot < limit``, taken by a compare-and-set: an INSERT (the primary key
refuses a second taker) or an UPDATE of an expired lease. Its holder renews the lease while it works; a worker that
is killed stops renewing, so its slot frees itself ``lease_seconds`` later — no cleanup job, no lock held across
transactions, the same on SQLite and PostgreSQL. Lowering a limit leaves the slots above it to finish; they are
never taken again.

Waiters queue: each poll refreshes the waiter's row, and a waiter takes a free slot only while fewer waiters are
ahead of it than slots are free — ahead meaning a higher priority (Dagster's ``dagster/priority``: production 10,
backfills below 0), then an earlier arrival. A waiter that stops polling expires like a lease.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import target_slot_waiters, target_slots
from backfill_assets.engine.store.transactions import read


@dataclass(frozen=True)
class SlotHolder:
    """Who wants a slot: a unique holder id, its priority, and what it writes (shown to those who wait)."""

    holder: str
    priority: int = 0
    dagster_run_id: str | None = None
    asset: str | None = None
    partition_key: str | None = None

    def describe(self) -> str:
        what = " ".join(p for p in (self.asset, self.partition_key) if p)
        return f"{what or self.holder} (run {self.dagster_run_id or '?'}, priority {self.priority})"


class TargetSlots:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def try_acquire(
        self, target: str, limit: int, who: SlotHolder, lease_seconds: float, now: datetime | None = None
    ) -> int | None:
        """The slot number taken, or None (queued: the next call tries again)."""
        now = now or utc_now()
        expires = iso(now + timedelta(seconds=lease_seconds))
        if not self._my_turn(target, limit, who, iso(now), expires):
            return None
        for slot in range(limit):
            if self._take(target, slot, who, iso(now), expires):
                with self.catalog.engine.begin() as conn:
                    conn.execute(target_slot_waiters.delete().where(_waiter(target, who.holder)))
                return slot
        return None

    def _my_turn(self, target: str, limit: int, who: SlotHolder, now: str, expires: str) -> bool:
        """Refresh ``who``'s place in the queue; True when fewer live waiters are ahead than slots are free."""
        w = target_slot_waiters.c
        with self.catalog.engine.begin() as conn:
            since = conn.execute(sa.select(w.since).where(w.target == target, w.holder == who.holder)).scalar()
            if since is None:
                since = now
                conn.execute(target_slot_waiters.insert().values(
                    target=target, holder=who.holder, priority=who.priority, since=now, expires_at=expires))
            else:
                conn.execute(target_slot_waiters.update().where(_waiter(target, who.holder)).values(expires_at=expires))
            ahead = conn.execute(
                sa.select(sa.func.count()).where(
                    w.target == target, w.expires_at > now, w.holder != who.holder,
                    sa.or_(w.priority > who.priority,
                           sa.and_(w.priority == who.priority,
                                   sa.or_(w.since < since, sa.and_(w.since == since, w.holder < who.holder)))),
                )
            ).scalar_one()
            s = target_slots.c
            held = conn.execute(
                sa.select(sa.func.count()).where(s.target == target, s.slot < limit, s.expires_at > now)
            ).scalar_one()
        return ahead < limit - held

    def _take(self, target: str, slot: int, who: SlotHolder, now: str, expires: str) -> bool:
        s = target_slots.c
        values = dict(holder=who.holder, priority=who.priority, dagster_run_id=who.dagster_run_id, asset=who.asset,
                      partition_key=who.partition_key, acquired_at=now, expires_at=expires)
        with self.catalog.engine.begin() as conn:
            taken = conn.execute(
                target_slots.update().where(s.target == target, s.slot == slot, s.expires_at <= now).values(**values)
            ).rowcount
            if taken:
                return True
            if conn.execute(sa.select(s.holder).where(s.target == target, s.slot == slot)).first() is not None:
                return False
        try:
            with self.catalog.engine.begin() as conn:
                conn.execute(target_slots.insert().values(target=target, slot=slot, **values))
            return True
        except sa.exc.IntegrityError:  # another holder inserted it first
            return False

    def renew(self, target: str, slot: int, holder: str, lease_seconds: float, now: datetime | None = None) -> bool:
        """Extend the lease; False when it is no longer this holder's (it expired and was taken)."""
        now = now or utc_now()
        s = target_slots.c
        with self.catalog.engine.begin() as conn:
            return bool(conn.execute(
                target_slots.update()
                .where(s.target == target, s.slot == slot, s.holder == holder)
                .values(expires_at=iso(now + timedelta(seconds=lease_seconds)))
            ).rowcount)

    def release(self, target: str, slot: int, holder: str) -> None:
        s = target_slots.c
        with self.catalog.engine.begin() as conn:
            conn.execute(target_slots.delete().where(s.target == target, s.slot == slot, s.holder == holder))

    def leave_queue(self, target: str, holder: str) -> None:
        with self.catalog.engine.begin() as conn:
            conn.execute(target_slot_waiters.delete().where(_waiter(target, holder)))

    def holders(self, target: str, now: datetime | None = None) -> list[SlotHolder]:
        """The live holders of ``target``'s slots, by slot."""
        s = target_slots.c
        with read(self.catalog.reader, self.catalog.engine) as conn:
            rows = conn.execute(
                sa.select(target_slots).where(s.target == target, s.expires_at > iso(now or utc_now())).order_by(s.slot)
            ).all()
        return [SlotHolder(r.holder, r.priority, r.dagster_run_id, r.asset, r.partition_key) for r in rows]



def _waiter(target: str, holder: str) -> sa.ColumnElement[bool]:
    w = target_slot_waiters.c
    return sa.and_(w.target == target, w.holder == holder)
