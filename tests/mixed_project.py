"""A team's project as it is before and after adopting the library: gated assets beside ordinary assets of every
partitioning (none, hourly UTC, weekly, date × region, daily in another timezone), combined with
``dg.Definitions.merge``. A code location of its own (``dagster definitions validate -m tests.mixed_project``)."""

import dagster as dg
import pandas as pd

from backfill_assets import (
    BusinessCalendar,
    backfill_definitions,
    daily_partitions_for,
    gated_asset,
    not_empty,
    unique_key,
)

calendar = BusinessCalendar("Europe/Berlin", "2024-01-01")


@gated_asset(calendar=calendar, audits=[unique_key("sensor_id", "hour"), not_empty()])
def meter_readings(interval) -> pd.DataFrame:
    """Hourly readings of three meters for one business day."""
    hours = pd.date_range(interval.start_utc, interval.end_utc, freq="h", inclusive="left")
    return pd.DataFrame([{"sensor_id": s, "hour": h, "kwh": 0.5} for s in "abc" for h in hours])


@gated_asset(calendar=calendar, deps=[meter_readings], audits=[unique_key("sensor_id")])
def daily_usage(interval, meter_readings: pd.DataFrame) -> pd.DataFrame:
    """kWh per meter and business day."""
    return meter_readings.groupby("sensor_id", as_index=False)["kwh"].sum()


@dg.asset
def sites() -> list[str]:
    """Unpartitioned: the team's list of sites."""
    return ["berlin", "hamburg"]


@dg.asset(partitions_def=dg.HourlyPartitionsDefinition(start_date="2024-01-01-00:00"))
def hourly_prices(context: dg.AssetExecutionContext) -> float:
    """Hourly, in UTC."""
    return 0.30 + len(context.partition_key) / 1000


@dg.asset(partitions_def=dg.WeeklyPartitionsDefinition(start_date="2024-01-01"))
def weekly_summary() -> int:
    """Weekly."""
    return 7


REGIONS = dg.StaticPartitionsDefinition(["north", "south"])


@dg.asset(partitions_def=dg.MultiPartitionsDefinition(
    {"date": dg.DailyPartitionsDefinition(start_date="2024-01-01"), "region": REGIONS}
))
def usage_by_region(context: dg.AssetExecutionContext) -> str:
    """Date × region."""
    return str(context.partition_key)


@dg.asset(partitions_def=dg.DailyPartitionsDefinition(start_date="2024-01-01", timezone="America/New_York"))
def new_york_report(context: dg.AssetExecutionContext) -> str:
    """Daily, in another timezone than the gated assets'."""
    return context.partition_key


ORDINARY = [sites, hourly_prices, weekly_summary, usage_by_region, new_york_report]
LIBRARY = ["meter_readings", "daily_usage"]

defs = dg.Definitions.merge(
    backfill_definitions(assets=[meter_readings, daily_usage]),
    dg.Definitions(assets=ORDINARY),
)

# The team's own job over an ordinary asset, as `dagster job backfill` launches it.
team_weekly = dg.define_asset_job("team_weekly", selection=[weekly_summary])
defs = dg.Definitions.merge(defs, dg.Definitions(jobs=[team_weekly]))


@dg.asset(partitions_def=daily_partitions_for(calendar))
def usage_report(daily_usage: pd.DataFrame) -> float:
    """An ordinary asset downstream of a gated one: it gets the day's published version, through the library's IO
    manager, as any Dagster input."""
    return float(daily_usage["kwh"].sum())


usage_reports = dg.define_asset_job("usage_reports", selection=[usage_report])
defs = dg.Definitions.merge(defs, dg.Definitions(assets=[usage_report], jobs=[usage_reports]))
