"""A skipped cell's kind is stored beside its reason: the code reads the kind, never the words. A catalog made
before the kind existed gets it filled once, by `backfill-assets catalog upgrade`, from the words its kind was
recognised by."""

from __future__ import annotations

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import (
    PREVIOUS_NOT_PUBLISHED,
    UPSTREAM_NOT_PUBLISHED,
    Cell,
    CellOrigin,
    SkipKind,
)
from backfill_assets.engine.model.overrides import MARKED_SKIPPED
from backfill_assets.engine.plan.readiness import left_unpublished
from backfill_assets.engine.store import db
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import request_items
from backfill_assets.service.catalog_schema import upgrade_catalog_schema
from tests.engine.catalog_helpers import as_before_versioning

OLD_ROWS = {
    "a": (M.SKIPPED, UPSTREAM_NOT_PUBLISHED, SkipKind.LEFT_UNPUBLISHED),
    "b": (M.SKIPPED, PREVIOUS_NOT_PUBLISHED.format("2022-09-01"), SkipKind.LEFT_UNPUBLISHED),
    "c": (M.SKIPPED, f"{MARKED_SKIPPED}ana: source outage", SkipKind.MARKED),
    "d": (M.SKIPPED, "latest attempt PUBLISHED", SkipKind.DECIDED),
    "e": (M.PUBLISHED, None, None),
}


def _cell(decision: str, reason: str | None, kind: SkipKind | None) -> Cell:
    return Cell("req-x", "order_facts", "2022-09-02", 0, CellOrigin.PLANNED, decision, reason, skip_kind=kind)


def test_left_unpublished_reads_the_kind_not_the_reason():
    assert left_unpublished(_cell(M.SKIPPED, "any words at all", SkipKind.LEFT_UNPUBLISHED))
    assert not left_unpublished(_cell(M.SKIPPED, UPSTREAM_NOT_PUBLISHED, SkipKind.DECIDED))
    assert not left_unpublished(_cell(M.PENDING, UPSTREAM_NOT_PUBLISHED, None))
    assert not left_unpublished(None)


def test_an_older_catalog_gets_each_skipped_cells_kind_when_it_is_upgraded(catalog_url):
    Catalog(catalog_url)  # today's schema, then made older: unversioned, no kind column, rows written without one
    engine = db.engine_for(catalog_url)
    with engine.begin() as conn:
        as_before_versioning(conn)
        conn.exec_driver_sql("ALTER TABLE request_items DROP COLUMN skip_kind")
        old_columns = [c for c in request_items.c if c.name != "skip_kind"]
        conn.execute(sa.insert(sa.table("request_items", *(sa.column(c.name) for c in old_columns))), [
            dict(request_id="req-old", asset=asset, partition_key="2022-09-02", ordinal=0, origin="planned",
                 decision=decision.value, reason=reason, updated_at="2022-11-01T00:00:00")
            for asset, (decision, reason, _) in OLD_ROWS.items()
        ])
    db.dispose_all()

    upgrade_catalog_schema(catalog_url)  # what `backfill-assets catalog upgrade` runs
    with db.engine_for(catalog_url).connect() as conn:
        rows = conn.execute(sa.select(request_items.c.asset, request_items.c.skip_kind)).all()
    assert {asset: kind for asset, kind in rows} == {
        asset: (kind.value if kind else None) for asset, (_, _, kind) in OLD_ROWS.items()
    }
