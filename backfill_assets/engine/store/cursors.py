"""Named integer cursors in the catalog."""

from __future__ import annotations

import sqlalchemy as sa

from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import cursors
from backfill_assets.engine.store.transactions import begin, read


def read_cursor(catalog: Catalog, name: str, missing: str | None = None) -> int:
    """The cursor's value; 0 when it was never written, or ``missing``'s value (the cursor it takes over from)."""
    with read(catalog.reader, catalog.engine) as conn:
        value = conn.execute(sa.select(cursors.c.value).where(cursors.c.name == name)).scalar()
        if value is None and missing is not None:
            value = conn.execute(sa.select(cursors.c.value).where(cursors.c.name == missing)).scalar()
    return int(value or 0)


def write_cursor(catalog: Catalog, name: str, value: int) -> None:
    with begin(catalog.engine) as conn:
        updated = conn.execute(
            cursors.update().where(cursors.c.name == name).values(value=value, updated_at=iso(utc_now()))
        ).rowcount
        if not updated:
            conn.execute(cursors.insert().values(name=name, value=value, updated_at=iso(utc_now())))
