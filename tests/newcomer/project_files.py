"""The files of a team's existing Dagster project that adopts gated assets (the second newcomer project): two code
locations, Berlin and New York, each with a ``daily_usage`` under its own key prefix, beside the team's ordinary
assets — unpartitioned, hourly, date × region — and a plain report reading Berlin's published day through the
library's IO manager."""

from __future__ import annotations

BERLIN = '''
import dagster as dg
import pandas as pd

from backfill_assets import (
    BusinessCalendar, backfill_definitions, daily_partitions_for, gated_asset, not_empty, unique_key,
)

calendar = BusinessCalendar("Europe/Berlin", "2024-01-01")


@gated_asset(calendar=calendar, key_prefix="berlin", audits=[unique_key("sensor_id"), not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter of one Berlin business day (23 hours on 2024-03-31)."""
    hours = interval.duration.total_seconds() / 3600
    return pd.DataFrame({"sensor_id": ["a", "b"], "kwh": [0.5 * hours, 1.0 * hours]})


# The team's own assets, as they were before the library came.
@dg.asset
def meter_registry() -> list:
    return ["a", "b"]


@dg.asset(partitions_def=dg.HourlyPartitionsDefinition(start_date="2024-03-01-00:00"))
def hourly_readings(context: dg.AssetExecutionContext) -> str:
    return context.partition_key


REGIONS = dg.MultiPartitionsDefinition({
    "date": dg.DailyPartitionsDefinition(start_date="2024-03-01"),
    "region": dg.StaticPartitionsDefinition(["north", "south"]),
})


@dg.asset(partitions_def=REGIONS)
def regional_usage(context: dg.AssetExecutionContext) -> str:
    return context.partition_key


@dg.asset(partitions_def=daily_partitions_for(calendar), ins={"usage": dg.AssetIn(key=["berlin", "daily_usage"])})
def usage_report(usage: pd.DataFrame) -> float:
    """The team's report: reads the published day only."""
    return float(usage["kwh"].sum())


defs = dg.Definitions.merge(
    backfill_definitions(assets=[daily_usage], location="berlin"),
    dg.Definitions(assets=[meter_registry, hourly_readings, regional_usage, usage_report]),
)
'''

NEW_YORK = '''
import pandas as pd

from backfill_assets import BusinessCalendar, backfill_definitions, gated_asset, not_empty

calendar = BusinessCalendar("America/New_York", "2024-01-01")


@gated_asset(calendar=calendar, key_prefix="new_york", audits=[not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter of one New York business day."""
    hours = interval.duration.total_seconds() / 3600
    return pd.DataFrame({"sensor_id": ["x", "y"], "kwh": [2.0 * hours, 3.0 * hours]})


defs = backfill_definitions(assets=[daily_usage], location="new_york")
'''

WORKSPACE = """
load_from:
  - python_module: {module_name: energy_co.berlin, working_directory: .}
  - python_module: {module_name: energy_co.new_york, working_directory: .}
"""
