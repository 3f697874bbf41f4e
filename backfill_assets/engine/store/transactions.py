"""One transaction for an operation and its trail row.

Every store method writes through ``begin(engine)``: a transaction of its own, or, inside ``atomic(engine)``, the
operation's one. The service opens ``atomic`` around an operation's state changes and its ``operations`` row
(``ServiceContext.atomic``), so both commit together or neither does: a state change can never exist without its
trail row, nor a trail row without its change. Outside ``atomic`` nothing differs from a plain ``engine.begin()``.

Inside ``atomic``, reads through the catalog's *reader* (another connection) do not see the operation's own
uncommitted writes: an operation reads what it needs before it writes, or from what its writes returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from sqlalchemy.engine import Connection, Engine

# engine id → the connection of the operation's transaction open on it (per thread / task: a ContextVar).
_OPEN: ContextVar[tuple[tuple[int, Connection], ...]] = ContextVar("backfill_open_transactions", default=())


def open_transaction(engine: Engine) -> Connection | None:
    """The connection of the ``atomic`` transaction open on ``engine`` in this context, or None."""
    return next((conn for key, conn in _OPEN.get() if key == id(engine)), None)


@contextmanager
def begin(engine: Engine) -> Iterator[Connection]:
    """A write transaction: the open ``atomic`` one on ``engine`` (it commits with the operation), else a new one
    that commits when the block ends."""
    conn = open_transaction(engine)
    if conn is not None:
        # A savepoint: a store method that catches its own failure (a lost race it runs again) undoes only its
        # part; anything it raises still rolls the whole operation back.
        with conn.begin_nested():
            yield conn
        return
    with engine.begin() as conn:
        yield conn


@contextmanager
def atomic(engine: Engine) -> Iterator[Connection]:
    """Every ``begin(engine)`` inside the block writes on one transaction, committed when the block ends and rolled
    back whole when it raises. Nested: the outer block's transaction."""
    conn = open_transaction(engine)
    if conn is not None:
        yield conn
        return
    with engine.begin() as conn:
        token = _OPEN.set((*_OPEN.get(), (id(engine), conn)))
        try:
            yield conn
        finally:
            _OPEN.reset(token)


@contextmanager
def read(reader: Engine, engine: Engine | None) -> Iterator[Connection]:
    """A connection to read on: inside ``atomic`` on ``engine`` its transaction (an operation sees its own writes),
    else one of ``reader`` (the catalog's read-only engine)."""
    conn = open_transaction(engine) if engine is not None else None
    if conn is not None:
        yield conn
        return
    with reader.connect() as conn:
        yield conn
