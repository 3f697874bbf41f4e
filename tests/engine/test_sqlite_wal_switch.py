"""Connections opening a fresh SQLite catalog file at the same moment all get it in WAL mode: SQLite answers
"database is locked" at once, without its busy handler, to a connection switching the journal mode while another
does (``db._enter_wal`` tries again). Threads race here as processes would: SQLite keeps the same locks between the
connections of one process."""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa

from backfill_assets.engine.store import db

CONNECTIONS = 6
# One round in about sixteen lost the race before the retry (threads; processes lose it more often): a hundred
# rounds fail that code all but surely.
ROUNDS = 100


def _connect_at_once(url: str) -> list[str]:
    barrier, outcomes = threading.Barrier(CONNECTIONS), []

    def connect() -> None:
        engine = db.create_engine(url)  # an engine each: its own pool, so its own first connection
        try:
            barrier.wait(timeout=30)
            with engine.connect() as conn:
                outcomes.append(conn.exec_driver_sql("PRAGMA journal_mode").scalar_one())
        except Exception as exc:  # noqa: BLE001 - reported for the assertion below
            outcomes.append(f"{type(exc).__name__}: {exc}")
        finally:
            engine.dispose()

    threads = [threading.Thread(target=connect) for _ in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    return outcomes


def test_connections_opening_a_fresh_file_at_once_all_find_it_in_wal_mode(tmp_path: Path):
    for round_no in range(ROUNDS):
        url = f"sqlite:///{tmp_path / f'catalog-{round_no}.db'}"
        assert _connect_at_once(url) == ["wal"] * CONNECTIONS, f"round {round_no}"


def test_a_lock_that_is_not_the_switch_still_fails_after_the_busy_timeout(tmp_path: Path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'catalog.db'}"
    monkeypatch.setattr(db, "SQLITE_BUSY_SECONDS", 0)
    holder = sa.create_engine(url, connect_args={"isolation_level": None}, poolclass=sa.pool.NullPool)
    with holder.connect() as held:
        held.exec_driver_sql("PRAGMA journal_mode=DELETE")
        held.exec_driver_sql("BEGIN EXCLUSIVE")
        engine = db.create_engine(url)
        try:
            with engine.connect():
                raise AssertionError("connected through an exclusive lock")
        except sa.exc.OperationalError as exc:
            assert "database is locked" in str(exc)
        finally:
            engine.dispose()
        held.exec_driver_sql("ROLLBACK")
