"""``backfill-assets-daemon``'s hold on its instance: one daemon per instance (docs/OPERATIONS.md, "One daemon per
instance").

Before Dagster starts anything, the daemon takes the catalog's daemon lease (``engine/store/daemon_lease.py``) and
looks at Dagster's own daemon heartbeats: a second ``backfill-assets-daemon``, or a ``dagster-daemon run`` already
running on the instance, refuses the start with one line naming the first and what to do. While it runs, a thread
renews the lease every third of its length; a daemon that finds its lease taken (it stalled past the expiry and
another daemon took over) stops its loops at once and exits non-zero, rather than drive requests beside the other.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from datetime import datetime

import dagster as dg

from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.daemon_lease import Acquired, DaemonLease, LeaseHolder, LeaseRow
from backfill_assets.integration.runs.dagster_adapter import HEARTBEAT_FRESH_SECONDS, daemon_heartbeat_after

logger = logging.getLogger("backfill_assets.daemon")

LEASE_SECONDS_ENV = "BACKFILL_DAEMON_LEASE_SECONDS"
PREFIX = "backfill-assets-daemon"


class DaemonRefused(BackfillError):
    """Another daemon drives this instance: the start is refused (one line: who, since when, what to do)."""


class InstanceLease:
    """The lease this daemon holds, renewed by a thread until ``release``; ``lost`` says why it no longer counts."""

    def __init__(self, lease: DaemonLease, me: LeaseHolder, lease_seconds: float):
        self.lease, self.me, self.lease_seconds = lease, me, lease_seconds
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew_until_stopped, name="backfill-assets-lease", daemon=True)

    def start(self) -> InstanceLease:
        self._thread.start()
        return self

    def release(self) -> None:
        self._stop.set()
        if self.lost is None:
            try:
                self.lease.release(self.me)
            except Exception:  # the catalog gone at shutdown: the lease expires on its own
                logger.warning("could not release the daemon lease; it expires in %.0f s", self.lease_seconds)

    def _renew_until_stopped(self) -> None:
        while not self._stop.wait(self.lease_seconds / 3):
            try:
                renewed = self.lease.renew(self.me, self.lease_seconds)
            except Exception:  # the catalog unreachable for a moment: renew again next time
                logger.warning("could not renew the daemon lease (the catalog did not answer); trying again")
                continue
            if not renewed:
                self._lose()
                return

    def _lose(self) -> None:
        """The lease was taken over: say by whom, and stop Dagster's loops (SIGINT is its clean shutdown)."""
        taker = self.lease.current()
        by = f"{taker.who.describe()}, since {taker.acquired_at}" if taker else "nobody holds it now"
        self.lost = (
            f"{PREFIX}: stopping: this daemon's lease on the instance was taken over ({by}) after it went "
            f"{self.lease_seconds:g} s without renewal; one daemon per instance, so this one stops driving"
        )
        logger.error(self.lost)
        os.kill(os.getpid(), signal.SIGINT)


def take_instance_lease(instance: dg.DagsterInstance, catalog: Catalog, lease_seconds: float) -> InstanceLease:
    """Take the instance's daemon lease, or raise ``DaemonRefused`` naming who drives the instance already: another
    backfill-assets-daemon (its live lease), or a Dagster daemon whose heartbeats are newer than the last lease."""
    lease = DaemonLease(catalog)
    me = LeaseHolder.this_process(str(instance.root_directory))
    taken = lease.acquire(me, lease_seconds)
    if not isinstance(taken, Acquired):
        raise DaemonRefused(refused_by_lease(taken.held))
    # Heartbeats from before the previous holder's lease ended may be its own; a newer one is another daemon's.
    after = _timestamp(taken.previous.expires_at) if taken.previous is not None else 0.0
    beat = daemon_heartbeat_after(instance, after)
    if beat is not None:
        lease.release(me)
        raise DaemonRefused(refused_by_heartbeat(*beat))
    return InstanceLease(lease, me, lease_seconds).start()


def refused_by_lease(held: LeaseRow) -> str:
    return (
        f"{PREFIX}: refused: another backfill-assets-daemon drives this instance ({held.who.describe()}, since "
        f"{held.acquired_at}, DAGSTER_HOME {held.who.instance}). Stop it first: one daemon per instance. If it is "
        f"gone, its lease expires at {held.expires_at} and a start after that takes over ({LEASE_SECONDS_ENV})."
    )


def refused_by_heartbeat(daemon_type: str, timestamp: float, daemon_id: str) -> str:
    age = max(0.0, time.time() - timestamp)
    return (
        f"{PREFIX}: refused: a Dagster daemon is running on this instance (its {daemon_type} heartbeat {age:.0f} s "
        f"ago, daemon id {daemon_id[:8]}): stop that `dagster-daemon run` and start backfill-assets-daemon in its "
        f"place; if it has just stopped, start again in {max(1.0, HEARTBEAT_FRESH_SECONDS - age):.0f} s."
    )


def _timestamp(stored: str) -> float:
    return datetime.fromisoformat(stored).timestamp()
