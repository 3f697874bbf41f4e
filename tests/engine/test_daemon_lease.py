"""One daemon per catalog: the daemon lease (``engine/store/daemon_lease.py``) on SQLite and PostgreSQL — refused
while held, taken over once expired or at once when its holder's process is known dead, lost when taken."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from datetime import timedelta

from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.daemon_lease import (
    Acquired,
    DaemonLease,
    LeaseHolder,
    Refused,
    pid_scope,
    process_is_dead,
)

LEASE = 30.0


def _elsewhere(name: str) -> LeaseHolder:
    """A daemon on another host: its process can never be known dead from here."""
    return LeaseHolder(name, f"host-{name}", 4242, f"host-{name}|boot|pid:[1]", "/srv/dagster_home")


def test_a_second_daemon_is_refused_naming_the_first_until_its_lease_expires(catalog: Catalog):
    lease, now = DaemonLease(catalog), utc_now()
    first, second = _elsewhere("a"), _elsewhere("b")

    assert isinstance(lease.acquire(first, LEASE, now=now), Acquired)
    refused = lease.acquire(second, LEASE, now=now + timedelta(seconds=LEASE - 1))

    assert isinstance(refused, Refused)
    assert refused.held.who == first and refused.held.acquired_at == iso(now)
    assert refused.held.expires_at == iso(now + timedelta(seconds=LEASE))
    # Its holder stopped renewing (SIGKILL on its host): taken over once the lease has run out.
    taken = lease.acquire(second, LEASE, now=now + timedelta(seconds=LEASE))
    assert isinstance(taken, Acquired) and taken.previous.who == first
    assert lease.current().who == second
    # The first, back from a stall, cannot renew: it has lost the lease and must stop.
    assert not lease.renew(first, LEASE)


def test_a_renewed_lease_is_never_taken_over(catalog: Catalog):
    lease, now = DaemonLease(catalog), utc_now()
    first, second = _elsewhere("a"), _elsewhere("b")
    lease.acquire(first, LEASE, now=now)
    for k in range(1, 6):  # renewed every third of the lease, long past its first expiry
        assert lease.renew(first, LEASE, now=now + timedelta(seconds=10 * k))
        assert isinstance(lease.acquire(second, LEASE, now=now + timedelta(seconds=10 * k + 1)), Refused)


def test_a_released_lease_is_taken_at_once_and_names_when_it_ended(catalog: Catalog):
    lease, now = DaemonLease(catalog), utc_now()
    first, second = _elsewhere("a"), _elsewhere("b")
    lease.acquire(first, LEASE, now=now)
    lease.release(first, now=now + timedelta(seconds=5))

    taken = lease.acquire(second, LEASE, now=now + timedelta(seconds=6))

    assert isinstance(taken, Acquired)
    assert taken.previous.expires_at == iso(now + timedelta(seconds=5))


def test_a_holder_on_this_host_whose_process_is_gone_is_taken_over_at_once(catalog: Catalog):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    here = LeaseHolder.this_process("/home")
    dead = replace(here, holder="dead", pid=gone.pid)
    alive = replace(here, holder="alive")  # this test's own process
    assert process_is_dead(dead) and not process_is_dead(alive) and dead.pid_scope == pid_scope()
    lease = DaemonLease(catalog)

    lease.acquire(alive, LEASE)
    assert isinstance(lease.acquire(replace(here, holder="next"), LEASE), Refused)
    lease.release(alive)
    lease.acquire(dead, LEASE)
    assert isinstance(lease.acquire(replace(here, holder="next"), LEASE), Acquired)


def test_two_daemons_starting_at_once_take_the_first_lease_once(catalog: Catalog):
    from concurrent.futures import ThreadPoolExecutor

    lease = DaemonLease(catalog)
    with ThreadPoolExecutor(4) as pool:
        outcomes = list(pool.map(lambda n: lease.acquire(_elsewhere(str(n)), LEASE), range(4)))

    assert sum(isinstance(o, Acquired) for o in outcomes) == 1
    [winner] = [o.row.who for o in outcomes if isinstance(o, Acquired)]
    assert {o.held.who for o in outcomes if isinstance(o, Refused)} == {winner}
