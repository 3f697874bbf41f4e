"""The naive Dagster code location: the same assets, daily partitions, an IO manager overwriting in place.

No versions, no checks, no catalog: what a first Dagster project would do. ``customer_snapshot`` depends on its own
previous day as Dagster spells it (a self-dependency through ``TimeWindowPartitionMapping(-1, -1)``), so Dagster's
asset backfill runs its days one after another (the depends-on-past measurement, ``bench/past.py``). Settings come
from the environment at run time (``BACKFILL_SOURCE_URL``, ``BENCH_OUT_DIR``).
"""

from pathlib import Path

import dagster as dg
import pandas as pd

from backfill_assets.examples.orders import transforms
from backfill_assets.examples.orders.domain import (
    CUSTOMER_SNAPSHOT,
    DAILY_REVENUE,
    DEMO_FIRST_DAY,
    DEMO_TIMEZONE,
    ORDER_FACTS,
    RAW_ORDERS,
)
from backfill_assets.examples.orders.source import SourceSystem
from bench.plain import compute, read_partition, write_partition

daily = dg.DailyPartitionsDefinition(start_date=DEMO_FIRST_DAY, timezone=DEMO_TIMEZONE, end_offset=0)


class ParquetInPlace(dg.ConfigurableIOManager):
    """``<root>/<asset>/date=<key>/data.parquet``, overwritten by every run of that partition."""

    root: str

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        write_partition(Path(self.root), context.asset_key.path[-1], context.asset_partition_key, obj)

    def load_input(self, context: dg.InputContext) -> pd.DataFrame | None:
        if not context.asset_partition_keys:  # the day before the first partition: no previous snapshot
            return None
        return read_partition(Path(self.root), context.asset_key.path[-1], context.asset_partition_key)


class Source(dg.ConfigurableResource):
    url: str

    def system(self) -> SourceSystem:
        return SourceSystem(self.url)


@dg.asset(name=RAW_ORDERS, partitions_def=daily)
def raw_orders(context: dg.AssetExecutionContext, source: Source) -> pd.DataFrame:
    """Orders extracted from the source for one business day."""
    return compute(RAW_ORDERS, context.partition_key, source.system(), None)


@dg.asset(name=ORDER_FACTS, partitions_def=daily, ins={"raw": dg.AssetIn(RAW_ORDERS)})
def order_facts(context: dg.AssetExecutionContext, raw: pd.DataFrame) -> pd.DataFrame:
    """One row per order, latest amendment, amounts in CNY."""
    return compute(ORDER_FACTS, context.partition_key, None, raw)


@dg.asset(name=DAILY_REVENUE, partitions_def=daily, ins={"facts": dg.AssetIn(ORDER_FACTS)})
def daily_revenue(context: dg.AssetExecutionContext, facts: pd.DataFrame) -> pd.DataFrame:
    """Revenue and order count per region for one business day."""
    return compute(DAILY_REVENUE, context.partition_key, None, facts)


PREVIOUS_DAY = dg.TimeWindowPartitionMapping(start_offset=-1, end_offset=-1,
                                             allow_nonexistent_upstream_partitions=True)


@dg.asset(
    name=CUSTOMER_SNAPSHOT,
    partitions_def=daily,
    ins={"facts": dg.AssetIn(ORDER_FACTS), "previous": dg.AssetIn(CUSTOMER_SNAPSHOT, partition_mapping=PREVIOUS_DAY)},
)
def customer_snapshot(
    context: dg.AssetExecutionContext, facts: pd.DataFrame, previous: pd.DataFrame | None
) -> pd.DataFrame:
    """Cumulative per-customer totals as of the end of the day: the previous day's snapshot plus today's orders."""
    start = transforms.empty_snapshot() if previous is None else previous
    return transforms.customer_snapshot(start, facts, context.partition_key)


defs = dg.Definitions(
    assets=[raw_orders, order_facts, daily_revenue, customer_snapshot],
    resources={
        "io_manager": ParquetInPlace(root=dg.EnvVar("BENCH_OUT_DIR")),
        "source": Source(url=dg.EnvVar("BACKFILL_SOURCE_URL")),
    },
)
