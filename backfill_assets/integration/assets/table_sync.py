"""A step's last act: the published tables of the assets it published brought in line with the pointers, so a
reader of the table sees a day the moment the step is done with it (the days a batched step published, in one
commit). A long chunk step also syncs as it goes, at most every ``SYNC_EVERY_S``, so its first days do not wait for
its last. A table that cannot be synced is a warning in the step's log, never a failed step: the pointer already
moved, and the daemon's next pass (or ``backfill-assets tables sync``) converges."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable

import dagster as dg

from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.integration.resources import BackfillResource


def publishing_catalog(backfill: BackfillResource) -> tuple[Catalog, list[Callable[[Version], Any]]]:
    """The catalog a gate publishes through, joined by the published tables that switch a day in the publish's own
    transaction (a PostgreSQL table on the catalog's database), and what the gate calls before its publish (their
    rows loaded). Bad table settings leave both out: the step publishes, its last act reports them."""
    catalog = backfill.catalog()
    try:
        tables = backfill.published_tables()
    except BackfillError:
        return catalog, []
    tables.join_publishes(catalog)
    return catalog, tables.preparers()


# One commit per asset costs ~0.1 s at the median: every 5 s keeps a chunk's publish -> visible in the table near 5 s
# for about 2 % more work (one commit per step measured 7.7 s p50 and 28 s p99 at 365 days, bench.published_tables).
SYNC_EVERY_S = 5.0


class StepTableSync:
    """The table syncs of one step: ``tick()`` after each day (a sync when ``SYNC_EVERY_S`` have passed since the
    step began or last synced), ``final()`` once at its end."""

    def __init__(self, log: dg.DagsterLogManager, backfill: BackfillResource, asset: str):
        self.log, self.backfill, self.asset = log, backfill, asset
        self.last = time.monotonic()

    def tick(self) -> None:
        if time.monotonic() - self.last >= SYNC_EVERY_S:
            self.final()

    def final(self) -> None:
        sync_tables_after_step(self.log, self.backfill, [self.asset])
        self.last = time.monotonic()


def sync_tables_after_step(log: dg.DagsterLogManager, backfill: BackfillResource, assets: Iterable[str]) -> None:
    try:
        tables = backfill.published_tables()
        if not tables.enabled:
            return
        report = tables.sync(backfill.catalog(), assets)
    except Exception as exc:  # noqa: BLE001 - bad table settings or an unreachable catalog: the data is published
        log.warning(f"published tables not synced: {type(exc).__name__}: {exc}")
        return
    for result in report.synced:
        if result.days:
            span = result.days[0] if len(result.days) == 1 else f"{result.days[0]}..{result.days[-1]}"
            log.info(f"published table {result.table}: {len(result.days)} day(s) switched ({span}), "
                     f"publish log seq {result.seq}")
    for table, why in report.failed:
        log.warning(f"published table {table} not synced (it lags the catalog until the next sync): {why}")
