"""One asset-day computed the plain way: extract by interval, the project's transforms, Parquet overwritten in place.

Shared by the floor loop (F), the naive Dagster assets (N) and the Airflow tasks (A), so that all of them do
exactly the same work per day. Imports only pandas/pyarrow/sqlalchemy and ``backfill_assets.engine`` (which never
imports dagster), so it also runs in Airflow's virtualenv.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.examples.orders import transforms
from backfill_assets.examples.orders.domain import DAILY_REVENUE, DEMO_TIMEZONE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.examples.orders.source import SourceSystem

from .locations import EARLIEST_FIRST_DAY

# The macro benchmark's graph. customer_snapshot (depends on the past, never batched) and revenue_alert (a side
# effect) are left out so that every contender can run the days in parallel and in batches.
ASSETS = (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE)
UPSTREAM = {RAW_ORDERS: None, ORDER_FACTS: RAW_ORDERS, DAILY_REVENUE: ORDER_FACTS}
# From the earliest first day of the benchmark's locations (bench/locations): a day's interval does not depend on
# where the calendar starts, and the floor and the seeding must know every location's days.
CALENDAR = BusinessCalendar(DEMO_TIMEZONE, date.fromisoformat(EARLIEST_FIRST_DAY))


def partition_file(root: Path, asset: str, key: str) -> Path:
    return Path(root) / asset / f"date={key}" / "data.parquet"


def write_partition(root: Path, asset: str, key: str, frame: pd.DataFrame) -> Path:
    path = partition_file(root, asset, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)  # overwrites: the naive way
    return path


def read_partition(root: Path, asset: str, key: str) -> pd.DataFrame:
    return pq.read_table(partition_file(root, asset, key)).to_pandas()


def compute(asset: str, key: str, source: SourceSystem | None, upstream: pd.DataFrame | None) -> pd.DataFrame:
    if asset == RAW_ORDERS:
        return source.extract(CALENDAR.interval(key))
    if asset == ORDER_FACTS:
        return transforms.order_facts(upstream, key)
    if asset == DAILY_REVENUE:
        return transforms.daily_revenue(upstream, key)
    raise ValueError(f"not a benchmark asset: {asset}")


def run_asset_day(root: Path, source: SourceSystem, asset: str, key: str) -> Path:
    """Read the upstream file of the same day (if any), compute, overwrite this asset's file of the day."""
    parent = UPSTREAM[asset]
    upstream = read_partition(root, parent, key) if parent else None
    return write_partition(root, asset, key, compute(asset, key, source, upstream))
