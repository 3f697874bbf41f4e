"""The correctness cross-checks: every contender must end with the same daily_revenue over the same days, and the
depends-on-past measurements with the same customer_snapshot (its lifetime orders: every order of the days so far)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd
import pyarrow.parquet as pq

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE

from .plain import partition_file


def _totals(frames: Iterable[pd.DataFrame], expected_days: int) -> dict:
    days = orders = 0
    revenue = 0.0
    for frame in frames:
        days += 1
        orders += int(frame["orders"].sum())
        revenue += float(frame["revenue_cny"].sum())
    return {"days": days, "missing_days": expected_days - days, "orders": orders, "revenue_cny": round(revenue, 2)}


def revenue_from_files(root: Path, keys: list[str]) -> dict:
    paths = [partition_file(root, DAILY_REVENUE, k) for k in keys]
    return _totals((pq.read_table(p).to_pandas() for p in paths if p.exists()), len(keys))


def revenue_from_catalog(catalog_url: str, keys: list[str]) -> dict:
    """Read the published (current) version of every day, as any reader of the product would."""
    current = Catalog(catalog_url).current_many(DAILY_REVENUE, keys)
    return _totals((pq.read_table(v.path).to_pandas() for v in current.values()), len(keys))


def agree(checks: dict[str, dict]) -> bool:
    """All contenders saw every day and the same orders and revenue (to the cent)."""
    values = {(c["days"], c["missing_days"], c["orders"], c["revenue_cny"]) for c in checks.values()}
    return len(values) == 1 and next(iter(values))[1] == 0


def _snapshot_totals(frame: pd.DataFrame | None, day: str) -> dict:
    if frame is None:
        return {"as_of": day, "customers": 0, "lifetime_orders": 0, "lifetime_revenue_cny": 0.0}
    return {"as_of": day, "customers": int(len(frame)), "lifetime_orders": int(frame["lifetime_orders"].sum()),
            "lifetime_revenue_cny": round(float(frame["lifetime_revenue_cny"].sum()), 2)}


def snapshot_from_catalog(catalog_url: str, day: str) -> dict:
    """customer_snapshot's published version of ``day``: customers, lifetime orders and revenue."""
    current = Catalog(catalog_url).current_many(CUSTOMER_SNAPSHOT, [day]).get(day)
    return _snapshot_totals(pq.read_table(current.path).to_pandas() if current else None, day)


def snapshot_from_files(root: Path, day: str) -> dict:
    path = partition_file(root, CUSTOMER_SNAPSHOT, day)
    return _snapshot_totals(pq.read_table(path).to_pandas() if path.exists() else None, day)
