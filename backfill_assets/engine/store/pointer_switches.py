"""Work that commits or rolls back with a pointer move: a published table on the catalog's own PostgreSQL database
switching the day inside the move's transaction (``PostgresTables.join_publishes``).

The catalog calls every registered switch inside the transaction that moves a pointer (publish, accept, rollback,
an operator's reject), **before** the compare-and-swap: the switch's locks come before the pointer row and the
``log_head`` row, which the move takes last and holds to the commit, so nothing waits on a reader's lock while
holding the lock every publish needs. Each switch runs in a savepoint: one that fails is undone alone and the move
goes on (the table lags until its next sync); a move that fails takes the switch with it.
"""

from __future__ import annotations

import logging
from typing import Protocol

from sqlalchemy.engine import Connection

from backfill_assets.engine.store.catalog_records import Version

log = logging.getLogger(__name__)


class InTransactionSwitch(Protocol):
    def switch_in_transaction(self, conn: Connection, version: Version, action: str) -> None:
        """Make ``version`` what serves its (asset, day), in ``conn``'s transaction; ``action`` says which move
        (``publish`` or ``rollback``)."""
        ...


def run_switches(conn: Connection, switches: list[InTransactionSwitch], version: Version, action: str) -> None:
    """Every switch in a savepoint of its own; a failure is logged, never raised (the pointer is the truth)."""
    if not switches or conn.dialect.name != "postgresql":
        return
    for switch in switches:
        try:
            with conn.begin_nested():
                switch.switch_in_transaction(conn, version, action)
        except Exception as exc:  # noqa: BLE001 - the move goes on; the table's next sync switches the day
            why = " ".join(f"{type(exc).__name__}: {exc}".split())[:600]
            log.warning("%s %s: the published table was not switched with the %s (%s); its next sync will",
                        version.asset, version.partition_key, action, why)
