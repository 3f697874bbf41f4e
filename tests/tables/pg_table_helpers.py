"""Helpers of the PostgreSQL published table tests, in their own module so spawned processes can import them."""

from __future__ import annotations

from typing import Any

import pandas as pd
import psycopg2

from backfill_assets.engine.model.settings import TableSettings
from backfill_assets.engine.store.catalog import Catalog, Version
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.postgres_table import PostgresTables
from tests.engine.catalog_helpers import PASSED, identity

# The days both PostgreSQL table modules publish.
D1, D2, D3 = "2022-10-01", "2022-10-02", "2022-10-03"
DAYS = [D1, D2, D3]

SCHEMA = "published"


def table_settings(pg_url: str, warehouse_root: str) -> TableSettings:
    return TableSettings(("postgres",), "sqlite:///unused.db", None, "published", pg_url, SCHEMA, warehouse_root)


def frame_of(marker: str, rows: int) -> pd.DataFrame:
    """Rows that say which version they belong to (``marker``), so two versions of one day are told apart."""
    return pd.DataFrame({"n": list(range(rows)), "marker": [marker] * rows, "amount": [1.5 * i for i in range(rows)]})


def written(catalog: Catalog, warehouse: Warehouse, asset: str, key: str, run: str, rows: int = 3,
            frame: pd.DataFrame | None = None) -> Version:
    """A version of (asset, key) written to the warehouse with its day column, waiting for its checks."""
    ident = identity(run, key=key, asset=asset)
    version = catalog.begin_version(ident)
    directory = warehouse.version_dir(asset, key, run, version.attempt_no)
    data = frame if frame is not None else frame_of(run, rows)
    w = warehouse.write(directory, data, ident.labels(version.attempt_no), {"version_id": version.version_id}, day=key)
    return catalog.mark_verifying(
        version.version_id, path=w.path, rows=w.rows, sha256=w.sha256, manifest_sha256=w.manifest_sha256,
        stats=w.stats, input_versions={},
    )


def published(catalog: Catalog, warehouse: Warehouse, asset: str, key: str, run: str, rows: int = 3,
              frame: pd.DataFrame | None = None) -> Version:
    version = written(catalog, warehouse, asset, key, run, rows, frame)
    catalog.publish(version.version_id, PASSED)
    return catalog.get(version.version_id)


def rejected(catalog: Catalog, warehouse: Warehouse, asset: str, key: str, run: str, rows: int = 3) -> Version:
    version = written(catalog, warehouse, asset, key, run, rows)
    return catalog.reject(version.version_id, [{"name": "row_count", "passed": False}], "blocking check failed")


def days_of(pg_url: str, asset: str) -> dict[str, tuple[int, str]]:
    """What a plain SQL reader sees: per day, its row count and the version markers of its rows."""
    with psycopg2.connect(pg_url) as conn, conn.cursor() as cur:
        cur.execute(
            f'SELECT partition_date, count(*), string_agg(DISTINCT marker, \',\') FROM "{SCHEMA}"."{asset}" '
            "GROUP BY 1 ORDER BY 1"
        )
        rows = cur.fetchall()
    conn.close()
    return {d.isoformat(): (n, markers) for d, n, markers in rows}


def pointers_of(catalog: Catalog, asset: str, keys: list[str]) -> dict[str, str]:
    return {key: catalog.current(asset, key).version_id for key in keys}


def race_sync(catalog_url: str, pg_url: str, warehouse_root: str, asset: str, barrier, results) -> None:
    """Sync the asset's table at the same moment as the other racers; report what this one switched."""
    try:
        catalog = Catalog(catalog_url)
        tables = PostgresTables(table_settings(pg_url, warehouse_root))
        barrier.wait(timeout=120)
        result: Any = tables.sync(catalog, asset)
        results.put(("synced", list(result.days), list(result.versions)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put(("error", asset, f"{type(exc).__name__}: {exc}"))
        barrier.abort()


def sql(pg_url: str, query: str, *params) -> list[tuple]:
    conn = psycopg2.connect(pg_url)
    try:
        with conn, conn.cursor() as cur:
            cur.execute(query, params or None)
            return cur.fetchall() if cur.description else []
    finally:
        conn.close()


def version_tables(pg_url: str, asset: str) -> set[str]:
    rows = sql(pg_url, "SELECT tablename FROM pg_tables WHERE schemaname = 'published' AND tablename LIKE %s",
                f"{asset}\\_\\_v\\_%")
    return {r[0] for r in rows}
