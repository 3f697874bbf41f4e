"""The orders example as the tests use it: its definitions, graph and calendar, and in-process runs of it."""

from __future__ import annotations

from typing import Any

from backfill_assets import graph_of
from backfill_assets.examples.orders import MODULE
from backfill_assets.examples.orders.definitions import defs as DEFS
from backfill_assets.integration.assets.partitions import daily_partitions_for
from backfill_assets.integration.runs import local_runs

GRAPH = graph_of(DEFS)
CALENDAR = GRAPH.calendar
DAILY_PARTITIONS = daily_partitions_for(CALENDAR)

__all__ = ["CALENDAR", "DAILY_PARTITIONS", "DEFS", "GRAPH", "MODULE", "run_chunk", "run_partitions"]


def run_partitions(instance, partition_keys, **options: Any) -> list[local_runs.LocalRun]:
    return local_runs.run_partitions(instance, partition_keys, defs=DEFS, **options)


def run_chunk(instance, days_by_asset, **options: Any) -> local_runs.LocalRun:
    return local_runs.run_chunk(instance, days_by_asset, defs=DEFS, **options)
