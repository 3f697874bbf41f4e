"""What the pointers of one asset became after a point of the publish log: the published tables' one input.

Every pointer move (publish, accept, rollback, reject) writes a ``publish_log`` row in its own transaction, with a
``seq`` assigned under the ``log_head`` lock, so seq order is commit order and any read sees a prefix of the log.
A published table that has applied the log up to ``seq`` S holds exactly the pointers as they were at S; applying
the rows after S (the last one per day) brings it to the head. The table can lag the pointers, never lead them.

Not every row is a move: ``reconcile --repair`` logs one (action ``repair``) for a version published without its
Dagster event, and that version may have been replaced since. Only the actions that move a pointer are read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from backfill_assets.engine.store.catalog import ACTION_PUBLISH, ACTION_ROLLBACK, Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.schema import log_head, publish_log, versions
from backfill_assets.engine.store.transactions import read

# The actions of the log rows that move a pointer: publish (an accept too) and rollback (a reject too).
POINTER_MOVES = (ACTION_PUBLISH, ACTION_ROLLBACK)


@dataclass(frozen=True)
class PointerChanges:
    """The asset's days whose pointer moved after ``after_seq``, each with the version it points to at ``seq``
    (the newest log row read), and the log rows' request ids (who published what)."""

    asset: str
    after_seq: int
    seq: int
    days: dict[str, Version]
    requests: tuple[str, ...]
    actions: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.days


def head_seq(catalog: Catalog) -> int:
    """The newest seq of the publish log (0 when nothing was ever published)."""
    with read(catalog.reader, catalog.engine) as conn:
        return int(conn.execute(sa.select(log_head.c.seq).where(log_head.c.id == 1)).scalar() or 0)


def pointer_changes(catalog: Catalog, asset: str, after_seq: int) -> PointerChanges:
    """The asset's pointer moves after ``after_seq``, up to the newest log row (of any asset) at the time of the
    read: the table's new position is that row's seq, so a table with nothing of its own to apply still says how
    far it has looked."""
    with read(catalog.reader, catalog.engine) as conn:
        newest, rows = _moves(conn, asset, after_seq)
        latest = {row.partition_key: row.version_id for row in rows}  # the last move of each day wins
        found = _versions(conn, list(latest.values()))
    days = {key: found[vid] for key, vid in sorted(latest.items())}
    requests = tuple(sorted({r.request_id for r in rows if r.request_id}))
    actions = tuple(sorted({r.action for r in rows}))
    return PointerChanges(asset, after_seq, max(newest, after_seq), days, requests, actions)


def pointer_ids_after(catalog: Catalog, asset: str, after_seq: int) -> dict[str, str]:
    """The days whose pointer moved after ``after_seq``, in day order, each with the version id it points to: what
    ``pointer_changes`` reads, without the versions' rows (a table's lag needs the days alone; at ten years of an
    asset, parsing its 3,650 versions was most of ``reconcile``'s look at the tables)."""
    with read(catalog.reader, catalog.engine) as conn:
        _, rows = _moves(conn, asset, after_seq)
    latest = {row.partition_key: row.version_id for row in rows}
    return dict(sorted(latest.items()))


def _moves(conn: sa.Connection, asset: str, after_seq: int) -> tuple[int, list[sa.Row[Any]]]:
    """The newest seq of the log, and the asset's pointer moves after ``after_seq`` up to it, in seq order."""
    newest = int(conn.execute(sa.select(sa.func.max(publish_log.c.seq))).scalar() or 0)
    rows = conn.execute(
        sa.select(publish_log.c.seq, publish_log.c.partition_key, publish_log.c.version_id,
                  publish_log.c.request_id, publish_log.c.action)
        .where(publish_log.c.asset == asset, publish_log.c.seq > after_seq, publish_log.c.seq <= newest,
               publish_log.c.action.in_(POINTER_MOVES))
        .order_by(publish_log.c.seq)
    ).all()
    return newest, list(rows)


def current_pointers(catalog: Catalog, asset: str) -> tuple[int, dict[str, Version]]:
    """Every day's current version of the asset and the log's seq they are current at (one read)."""
    changes = pointer_changes(catalog, asset, 0)
    return changes.seq, changes.days


def _versions(conn: sa.Connection, version_ids: list[str]) -> dict[str, Version]:
    found: dict[str, Version] = {}
    for start in range(0, len(version_ids), 500):
        chunk = version_ids[start:start + 500]
        rows = conn.execute(sa.select(versions).where(versions.c.version_id.in_(chunk))).all()
        found.update((version.version_id, version) for version in Version.from_rows(rows))
    return found
