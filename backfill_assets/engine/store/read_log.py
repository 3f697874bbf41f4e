"""Who read which version: the ``reads`` rows that let ``rollback`` list every consumer of a bad version."""

from __future__ import annotations

from typing import Sequence

from sqlalchemy.engine import Engine

from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.schema import reads
from backfill_assets.engine.store.transactions import begin


class ReadLog:
    """Writes to ``reads``; mixed into ``Catalog``, whose ``engine`` it uses."""

    engine: Engine

    def record_reads(self, consumer_version_id: str, consumer_run_id: str, inputs: Sequence[Version]) -> None:
        if not inputs:
            return
        now = iso(utc_now())
        with begin(self.engine) as conn:
            conn.execute(
                reads.insert(),
                [
                    dict(
                        consumer_version_id=consumer_version_id,
                        consumer_run_id=consumer_run_id,
                        consumer=consumer_version_id,
                        upstream_asset=v.asset,
                        upstream_partition=v.partition_key,
                        upstream_version_id=v.version_id,
                        at=now,
                    )
                    for v in inputs
                ],
            )

    def record_external_read(self, reader: str, version: Version, run_id: str | None = None) -> None:
        """A read by something that writes no version: ``reader`` is its label (``cli``, a plain Dagster asset's
        ``asset:<key>``), ``run_id`` its Dagster run when it has one; ``rollback`` lists it among the consumers."""
        with begin(self.engine) as conn:
            conn.execute(
                reads.insert().values(
                    consumer=f"external:{reader}",
                    consumer_run_id=run_id,
                    upstream_asset=version.asset,
                    upstream_partition=version.partition_key,
                    upstream_version_id=version.version_id,
                    at=iso(utc_now()),
                )
            )
