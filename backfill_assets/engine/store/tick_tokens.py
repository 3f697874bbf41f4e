"""Each request's driver tick token (``schema.driver_ticks``): what makes two drivers ticking one request at once
(two Dagster daemons on one instance) record, and so submit, only once. A tick reads the token before anything
else (``TickSnapshot``) and records its decisions only if it can move the token on from what it read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

import sqlalchemy as sa

from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.store.request_record import RequestRecord
from backfill_assets.engine.store.schema import driver_ticks, request_items, requests


@dataclass(frozen=True)
class LedgerState:
    """What of a request's ledger an idle driver tick would meet, in a few values: its tick token, its row, and how
    many of its cells have each decision. Every change a tick could act on moves one of them: a tick's records move
    the token; a cancel or pause the row; cells added move the count, and a finished cell reopened the pending
    count (``Ledger.add_cells``). Equal states, with equal runs, make equal ticks (``engine/plan/idle_ticks.py``)."""

    token: int
    row: tuple[tuple[str, Any], ...]
    decisions: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, token: int, record: RequestRecord, cells: Iterable[Cell]) -> "LedgerState":
        """The state a tick that read ``record`` and ``cells`` under ``token`` left, when it changed nothing."""
        return cls(token, _row(record.row), tuple(sorted(Counter(str(c.decision) for c in cells).items())))


def read_ledger_state(conn: sa.Connection, request_id: str) -> LedgerState | None:
    """The request's ``LedgerState`` in three small reads, in a tick's order (token, row, cells); None if there is
    no such request. The cells are counted in SQL, never read."""
    token = read_token(conn, request_id)
    row = conn.execute(sa.select(requests).where(requests.c.request_id == request_id)).first()
    if row is None:
        return None
    return LedgerState(token, _row(dict(row._mapping)), tuple(sorted(count_decisions(conn, request_id).items())))


def count_decisions(conn: sa.Connection, request_id: str) -> dict[str, int]:
    """How many of the request's cells have each decision (only those some cell has), counted in SQL."""
    c = request_items.c
    counts = conn.execute(
        sa.select(c.decision, sa.func.count()).where(c.request_id == request_id).group_by(c.decision)
    ).all()
    return {str(decision): int(n) for decision, n in counts}


def _row(row: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(row.items()))


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
