"""Partition claims: a cell is held by at most one open request at a time (docs/ARCHITECTURE.md#requests)."""

from __future__ import annotations

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store.schema import claims, request_items


def claimable_cells(conn: sa.Connection, request_id: str) -> list[tuple[str, str]]:
    """The cells a request must hold: every cell it may still run (skipped ones need no claim)."""
    rows = conn.execute(
        sa.select(request_items.c.asset, request_items.c.partition_key).where(
            request_items.c.request_id == request_id, request_items.c.decision != M.SKIPPED
        )
    ).all()
    return [(r.asset, r.partition_key) for r in rows]


def claimed_by(conn: sa.Connection, cells: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(asset, partition) → the open request holding it, for the given cells that are held."""
    if not cells:
        return {}
    held: dict[tuple[str, str], str] = {}
    partitions = sorted({p for _, p in cells})
    wanted = set(cells)
    for chunk_start in range(0, len(partitions), 500):
        chunk = partitions[chunk_start : chunk_start + 500]
        for row in conn.execute(sa.select(claims).where(claims.c.partition_key.in_(chunk))).all():
            if (row.asset, row.partition_key) in wanted:
                held[(row.asset, row.partition_key)] = row.request_id
    return held


def claim(conn: sa.Connection, request_id: str, cells: list[tuple[str, str]], now: str | None) -> None:
    if cells:
        conn.execute(
            claims.insert(),
            [dict(asset=a, partition_key=p, request_id=request_id, claimed_at=now) for a, p in cells],
        )


def overlap_message(holders: dict[tuple[str, str], str]) -> str:
    by_holder: dict[str, list[str]] = {}
    for (asset, partition), holder in sorted(holders.items()):
        by_holder.setdefault(holder, []).append(f"{asset} {partition}")
    parts = []
    for holder, cells in by_holder.items():
        shown = ", ".join(cells[:4]) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
        parts.append(f"{holder} holds {shown}")
    return "overlaps an open request: " + "; ".join(parts)


def release(conn: sa.Connection, request_id: str) -> None:
    """A closed request holds nothing."""
    conn.execute(claims.delete().where(claims.c.request_id == request_id))
