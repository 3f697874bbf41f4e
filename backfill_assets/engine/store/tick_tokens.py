"""Each request's driver tick token (``schema.driver_ticks``): what makes two drivers ticking one request at once
(two Dagster daemons on one instance) record, and so submit, only once. A tick reads the token before anything
else (``TickSnapshot``) and records its decisions only if it can move the token on from what it read."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.store.request_record import RequestRecord
from backfill_assets.engine.store.schema import driver_ticks


class StaleTick(Exception):
    """A cell changed since the tick read it: the whole record is rolled back."""


@dataclass(frozen=True)
class TickSnapshot:
    """What one driver tick read, in this order: the request's tick token, the request, its cells. Recording the
    tick (``Ledger.record_tick``) succeeds only if none of it changed meanwhile."""

    token: int
    record: RequestRecord
    cells: list[Cell]


def read_token(conn: sa.Connection, request_id: str) -> int:
    """The request's tick token: 0 before its first recorded tick."""
    token = conn.execute(sa.select(driver_ticks.c.seq).where(driver_ticks.c.request_id == request_id)).scalar()
    return int(token or 0)


def advance_token(conn: sa.Connection, request_id: str, token: int, now: str) -> bool:
    """Compare-and-set of the request's tick token from ``token`` to the next; False when another tick moved it.
    The first token is an INSERT: of two first ticks, the second fails on the primary key (IntegrityError)."""
    t = driver_ticks.c
    if token == 0:
        exists = conn.execute(sa.select(t.seq).where(t.request_id == request_id)).scalar()
        if exists is None:
            conn.execute(driver_ticks.insert().values(request_id=request_id, seq=1, ticked_at=now))
            return True
    return bool(conn.execute(
        driver_ticks.update().where(t.request_id == request_id, t.seq == token).values(seq=token + 1, ticked_at=now)
    ).rowcount)
