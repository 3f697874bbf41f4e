"""Named integer cursors in the catalog."""

from __future__ import annotations

import sqlalchemy as sa

from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import cursors
from backfill_assets.engine.store.transactions import begin, read


def read_cursor(catalog: Catalog, name: str) -> int:
    with read(catalog.reader, catalog.engine) as conn:
        value = conn.execute(sa.select(cursors.c.value).where(cursors.c.name == name)).scalar()
    return int(value or 0)


def write_cursor(catalog: Catalog, name: str, value: int) -> None:
    with begin(catalog.engine) as conn:
        updated = conn.execute(
            cursors.update().where(cursors.c.name == name).values(value=value, updated_at=iso(utc_now()))
        ).rowcount
        if not updated:
            conn.execute(cursors.insert().values(name=name, value=value, updated_at=iso(utc_now())))
