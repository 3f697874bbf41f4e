"""What every distributed scenario checks: one published version per cell, the one served, and an exact reconcile
(published files re-hashed)."""

from __future__ import annotations

import sqlalchemy as sa

from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.schema import versions
from backfill_assets.examples.orders.domain import RAW_ORDERS

REQUEST_TIMEOUT = "300"


def request_versions(stack, request_id: str) -> list:
    return stack.catalog.versions_where(versions.c.request_id == request_id)


def assert_published_exactly_once(stack, request_id: str, cells: set[tuple[str, str]]) -> list:
    """Each cell: one PUBLISHED version of this request, the one the pointer serves; returns those versions."""
    mine = request_versions(stack, request_id)
    published = [v for v in mine if v.state == VersionState.PUBLISHED.value]
    assert sorted((v.asset, v.partition_key) for v in published) == sorted(cells), [
        (v.version_id, v.state, v.error) for v in mine
    ]
    for version in published:
        assert stack.catalog.current(version.asset, version.partition_key).version_id == version.version_id
    return published


def assert_reconciles_exactly(stack, request_id: str, cells: int) -> dict:
    report = stack.cli_json("reconcile", request_id, "--verify-files")
    totals = report["totals"]
    assert report["complete"] is True, report
    assert (totals["published"], totals["duplicate_publishes"], totals["gaps"]) == (cells, 0, 0), totals
    return report


def held_attempt(stack, day: str, asset: str = RAW_ORDERS):
    """The attempt of (``asset``, ``day``) that a worker holds (state VERIFYING), or None."""
    rows = stack.catalog.versions_where(
        sa.and_(versions.c.asset == asset, versions.c.partition_key == day,
                versions.c.state == VersionState.VERIFYING.value)
    )
    return rows[0] if rows else None
