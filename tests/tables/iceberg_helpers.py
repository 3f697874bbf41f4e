"""Helpers of the Iceberg table tests, in their own module so spawned processes can import them."""

from __future__ import annotations

from backfill_assets.engine.model.settings import TableSettings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.tables.iceberg_table import IcebergTables


def iceberg_settings(iceberg_url: str, warehouse_root: str, namespace: str = "published") -> TableSettings:
    return TableSettings(("iceberg",), iceberg_url, None, namespace, None, namespace, warehouse_root)


def race_first_syncs(catalog_url: str, iceberg_url: str, warehouse_root: str, asset: str, namespaces: list[str],
                     barrier, results) -> None:
    """For each namespace in turn, the asset's first sync (which creates the namespace and the table) at the same
    moment as the other racers; reports each sync's outcome."""
    try:
        catalog = Catalog(catalog_url)
        outcomes = []
        for namespace in namespaces:
            tables = IcebergTables(iceberg_settings(iceberg_url, warehouse_root, namespace))
            barrier.wait(timeout=120)
            try:
                outcomes.append(("synced", tables.sync(catalog, asset).seq))
            except Exception as exc:  # noqa: BLE001 - the test names every racer that failed
                outcomes.append(("failed", f"{type(exc).__name__}: {exc}"[:500]))
        results.put(("done", outcomes))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put(("error", f"{type(exc).__name__}: {exc}"))
        barrier.abort()
