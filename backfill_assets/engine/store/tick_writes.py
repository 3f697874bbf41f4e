"""A driver tick's cell updates written in a few statements, each cell only if it still has what the tick read.

A settlement tick of a long request changes thousands of cells (a run of 366 days of three assets settles 1,098):
one UPDATE built and compiled per cell cost seconds. Here the cells the tick changes are read and locked once, each
update is checked against them as a per-cell ``UPDATE ... WHERE decision = ? AND run_key = ?`` would check it (one
cell changed twice in a tick: the second change expects what the tick read, so it fails as it did), and the
cells given the same values (a finished run's cells, a new run's) are written by one UPDATE per asset. And a single
cell's update without that check (``write_cell``: ``Ledger.update_cells``), in the same columns.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellUpdate
from backfill_assets.engine.store.schema import request_items
from backfill_assets.engine.store.tick_tokens import StaleTick

# Cell fields stored under another column name: request_items.run_id is the Dagster run of the cell.
COLUMN_OF = {"dagster_run_id": "run_id"}
CHUNK = 500


def column_values(update: CellUpdate, now: str) -> dict[str, Any]:
    """The columns an update writes; a submission also stamps ``submitted_at`` (the request's "created" time of
    the cell's run)."""
    values = {COLUMN_OF.get(k, k): v for k, v in update.values.items()}
    if values.get("decision") == M.SUBMITTED and "run_key" in values:
        values["submitted_at"] = now
    return values


def write_cell(conn: sa.Connection, request_id: str, update: CellUpdate, now: str) -> int:
    """Write one cell update whatever the cell holds (``Ledger.update_cells``); returns the rows written (0:
    the cell is not there)."""
    c = request_items.c
    where = [c.request_id == request_id, c.asset == update.asset, c.partition_key == update.partition_key]
    return conn.execute(
        request_items.update().where(*where).values(updated_at=now, **column_values(update, now))
    ).rowcount


def write_tick_cells(
    conn: sa.Connection, request_id: str, updates: list[CellUpdate], seen: dict[tuple[str, str], Cell], now: str
) -> None:
    """Write ``updates`` in order on ``conn`` (inside the tick's transaction, after the request row's lock);
    raises ``StaleTick`` if a cell is missing or no longer has the decision and run key the tick read."""
    if not updates:
        return
    current = _locked_states(conn, request_id, updates, seen)
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for update in updates:
        expect = seen.get(update.key)
        if expect is None or current.get(update.key) != (str(expect.decision), expect.run_key):
            raise StaleTick(f"{update.asset} {update.partition_key} changed since the tick read it")
        values = column_values(update, now)
        decision, run_key = current[update.key]
        current[update.key] = (str(values.get("decision", decision)), values.get("run_key", run_key))
        merged.setdefault(update.key, {}).update(values)
    # Cells given the same values (a run's settled cells, a submission's cells) share one UPDATE per asset.
    same: dict[tuple[str, tuple[tuple[str, Any], ...]], list[str]] = {}
    for (asset, partition), values in merged.items():
        same.setdefault((asset, tuple(sorted(values.items()))), []).append(partition)
    c = request_items.c
    for (asset, values_items), partitions in same.items():
        for start in range(0, len(partitions), CHUNK):  # bounded IN lists: SQLite limits bound parameters
            conn.execute(
                request_items.update()
                .where(c.request_id == request_id, c.asset == asset,
                       c.partition_key.in_(partitions[start : start + CHUNK]))
                .values(updated_at=now, **dict(values_items))
            )


def _locked_states(
    conn: sa.Connection, request_id: str, updates: list[CellUpdate], seen: dict[tuple[str, str], Cell]
) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(decision, run key) now of the cells that had a decision the tick changes a cell from, locked until the
    transaction ends (FOR UPDATE on PostgreSQL; on SQLite the request row's update already holds the write lock)."""
    decisions = sorted({str(seen[u.key].decision) for u in updates if u.key in seen})
    c = request_items.c
    rows = conn.execute(
        sa.select(c.asset, c.partition_key, c.decision, c.run_key)
        .where(c.request_id == request_id, c.decision.in_(decisions))
        .with_for_update()
    ).all()
    return {(r.asset, r.partition_key): (r.decision, r.run_key) for r in rows}
