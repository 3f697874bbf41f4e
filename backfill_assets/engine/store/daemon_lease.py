"""One daemon per catalog: the lease a running ``backfill-assets-daemon`` holds in the catalog (docs/OPERATIONS.md,
"One daemon per instance").

Two daemons on one instance (a double start, a second host pointed at the same Dagster storage and catalog) each
drive every request: twice the runs, publishes racing. The catalog is what every host of an instance shares, so the
lease lives there: one row, taken by a compare-and-set (an INSERT the primary key lets one taker win, or an UPDATE
of the row as it was read), renewed by its holder every third of ``lease_seconds``. A second daemon finds it held
and is refused, naming the holder. A holder that dies stops renewing: its lease is taken over once it expires, or
at once when the holder's process is known dead — the same host (same boot, same process namespace) and no such
process. A clean stop releases it (expires it now). A holder that finds its lease taken stops.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import daemon_lease

DAEMON = "backfill-assets-daemon"
DEFAULT_LEASE_SECONDS = 30.0
# The least lease a setting may ask for: renewals come every third of it, and each is a catalog write.
MIN_LEASE_SECONDS = 1.0


@dataclass(frozen=True)
class LeaseHolder:
    """Who holds (or asks for) the lease: a unique id, where its process runs and on which Dagster home."""

    holder: str
    host: str
    pid: int
    pid_scope: str
    instance: str

    @classmethod
    def this_process(cls, instance: str) -> "LeaseHolder":
        return cls(uuid.uuid4().hex, socket.gethostname(), os.getpid(), pid_scope(), instance)

    def describe(self) -> str:
        return f"host {self.host}, pid {self.pid}"


@dataclass(frozen=True)
class LeaseRow:
    """The lease as stored."""

    who: LeaseHolder
    acquired_at: str
    renewed_at: str
    expires_at: str

    def live(self, now: datetime) -> bool:
        return self.expires_at > iso(now)


@dataclass(frozen=True)
class Acquired:
    """The lease was taken; ``previous`` is the row it replaced (None on a catalog no daemon ever held)."""

    row: LeaseRow
    previous: LeaseRow | None


@dataclass(frozen=True)
class Refused:
    """Someone else holds the lease: who, and until when it lasts if it is not renewed."""

    held: LeaseRow


def pid_scope() -> str:
    """Where a process id names one process: this host, this boot, this process namespace. Two containers that share
    a host name but not their processes get different scopes, so neither takes the other's pid for dead."""
    parts = [socket.gethostname()]
    for source in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            path = Path(source)
            parts.append(os.readlink(path) if path.is_symlink() else path.read_text().strip())
        except OSError:
            parts.append("?")
    return "|".join(parts)[:255]


def process_is_dead(who: LeaseHolder) -> bool:
    """True only when ``who``'s process is known gone: in this process's scope and no process has its pid. A holder
    elsewhere (another host or container) is never known dead: its lease must expire."""
    if who.pid_scope != pid_scope() or "?" in who.pid_scope.split("|"):
        return False
    try:
        os.kill(who.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # a process of another user has the pid: alive
        return False
    return False


class DaemonLease:
    def __init__(self, catalog: Catalog, name: str = DAEMON):
        self.catalog, self.name = catalog, name

    def current(self) -> LeaseRow | None:
        with self.catalog.reader.connect() as conn:
            row = conn.execute(sa.select(daemon_lease).where(daemon_lease.c.name == self.name)).first()
        return _lease_row(row) if row is not None else None

    def acquire(self, me: LeaseHolder, lease_seconds: float, now: datetime | None = None) -> Acquired | Refused:
        """Take the lease, unless another holder's is live (not expired, its process not known dead)."""
        now = now or utc_now()
        for _ in range(3):  # a lost compare-and-set is read again: someone took it, or released it, meanwhile
            held = self.current()
            if held is not None and held.who.holder != me.holder and held.live(now) and not process_is_dead(held.who):
                return Refused(held)
            if self._take(me, held, lease_seconds, now):
                return Acquired(self.current() or _stored(me, now, lease_seconds), held)
        held = self.current()
        return Refused(held) if held is not None else Refused(_stored(me, now, lease_seconds))

    def _take(self, me: LeaseHolder, held: LeaseRow | None, lease_seconds: float, now: datetime) -> bool:
        c = daemon_lease.c
        values = dict(holder=me.holder, host=me.host[:255], pid=me.pid, pid_scope=me.pid_scope, instance=me.instance,
                      acquired_at=iso(now), renewed_at=iso(now), expires_at=iso(now + timedelta(seconds=lease_seconds)))
        try:
            with self.catalog.engine.begin() as conn:
                if held is None:
                    conn.execute(daemon_lease.insert().values(name=self.name, **values))
                    return True
                # Only the row as it was read: a holder that renewed, or a taker that came first, wins.
                return bool(conn.execute(
                    daemon_lease.update()
                    .where(c.name == self.name, c.holder == held.who.holder, c.expires_at == held.expires_at)
                    .values(**values)
                ).rowcount)
        except sa.exc.IntegrityError:  # another daemon inserted the first row first
            return False

    def renew(self, me: LeaseHolder, lease_seconds: float, now: datetime | None = None) -> bool:
        """Extend the lease; False when it is no longer ``me``'s (it was taken over)."""
        now = now or utc_now()
        c = daemon_lease.c
        with self.catalog.engine.begin() as conn:
            return bool(conn.execute(
                daemon_lease.update()
                .where(c.name == self.name, c.holder == me.holder)
                .values(renewed_at=iso(now), expires_at=iso(now + timedelta(seconds=lease_seconds)))
            ).rowcount)

    def release(self, me: LeaseHolder, now: datetime | None = None) -> None:
        """A clean stop: the lease expires now (the row stays, naming the last holder and when it stopped)."""
        now = now or utc_now()
        c = daemon_lease.c
        with self.catalog.engine.begin() as conn:
            conn.execute(
                daemon_lease.update().where(c.name == self.name, c.holder == me.holder).values(expires_at=iso(now))
            )


def _lease_row(row: sa.Row[Any]) -> LeaseRow:
    who = LeaseHolder(row.holder, row.host, int(row.pid), row.pid_scope, row.instance)
    return LeaseRow(who, row.acquired_at, row.renewed_at, row.expires_at)


def _stored(me: LeaseHolder, now: datetime, lease_seconds: float) -> LeaseRow:
    return LeaseRow(me, iso(now), iso(now), iso(now + timedelta(seconds=lease_seconds)))
