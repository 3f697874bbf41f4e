"""What a column added to the catalog needs in the rows written before it existed, filled once, in the transaction
that adds it (``db._add_new_columns``): the rows then read like new ones, so no code reads older forms."""

from __future__ import annotations

from typing import Callable

import sqlalchemy as sa

from backfill_assets.engine.model.cells import PREVIOUS_NOT_PUBLISHED, UPSTREAM_NOT_PUBLISHED, SkipKind
from backfill_assets.engine.model.overrides import MARKED_SKIPPED
from backfill_assets.engine.model.request_model import CellDecision
from backfill_assets.engine.store.schema import request_items


def _skip_kinds(conn: sa.Connection) -> None:
    """A skipped cell's kind, from the reason words its kind was recognised by before it was stored."""
    skipped = request_items.c.decision == CellDecision.SKIPPED.value
    reason = request_items.c.reason
    previous = PREVIOUS_NOT_PUBLISHED.replace("{}", "%")
    kinds = (
        (SkipKind.LEFT_UNPUBLISHED, sa.or_(reason == UPSTREAM_NOT_PUBLISHED, reason.like(previous))),
        (SkipKind.MARKED, reason.like(f"{MARKED_SKIPPED}%")),
    )
    for kind, condition in kinds:
        conn.execute(request_items.update().where(skipped, condition).values(skip_kind=kind.value))
    conn.execute(
        request_items.update().where(skipped, request_items.c.skip_kind.is_(None)).values(
            skip_kind=SkipKind.DECIDED.value
        )
    )


# (table, column) -> what fills the column in the rows that predate it.
FILL_ADDED_COLUMN: dict[tuple[str, str], Callable[[sa.Connection], None]] = {
    ("request_items", "skip_kind"): _skip_kinds,
}
