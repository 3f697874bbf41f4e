"""Skips decided at the start of a step of a backfill launched from Dagster, kept for the adoption sensor."""

from __future__ import annotations

from typing import Iterable

import sqlalchemy as sa

from backfill_assets.engine.model.cells import Skip, SkipKind
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import admissions
from backfill_assets.engine.store.transactions import begin, read


class Admissions:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def record_skip(self, dagster_run_id: str, asset: str, partition_key: str, skip: Skip) -> None:
        """Idempotent: a retried step that skips again keeps the first reason."""
        with begin(self.catalog.engine) as conn:
            exists = conn.execute(
                sa.select(admissions.c.reason).where(
                    admissions.c.dagster_run_id == dagster_run_id,
                    admissions.c.asset == asset,
                    admissions.c.partition_key == partition_key,
                )
            ).first()
            if exists is None:
                conn.execute(
                    admissions.insert().values(
                        dagster_run_id=dagster_run_id, asset=asset, partition_key=partition_key,
                        reason=skip.reason[:2000], at=iso(utc_now()), skip_kind=skip.kind.value,
                        followed_run_id=skip.followed_run_id,
                    )
                )

    def skips_of_runs(self, run_ids: Iterable[str]) -> dict[tuple[str, str, str], Skip]:
        """(asset, partition, Dagster run) → why the step left the cell alone."""
        ids = list(run_ids)
        found: dict[tuple[str, str, str], Skip] = {}
        with read(self.catalog.reader, self.catalog.engine) as conn:
            for start in range(0, len(ids), 500):
                rows = conn.execute(
                    sa.select(admissions).where(admissions.c.dagster_run_id.in_(ids[start : start + 500]))
                ).all()
                for r in rows:
                    kind = SkipKind(r.skip_kind) if r.skip_kind else SkipKind.DECIDED
                    found[(r.asset, r.partition_key, r.dagster_run_id)] = Skip(r.reason, kind, r.followed_run_id)
        return found
