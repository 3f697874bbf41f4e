"""Berlin's meters under the key prefix ``berlin``: ``berlin/daily_usage``, ``berlin/daily_total`` reading it by its
name alone, and an ordinary asset reading the published day through the library's IO manager."""

import dagster as dg
import pandas as pd

from backfill_assets import BusinessCalendar, backfill_definitions, daily_partitions_for, gated_asset, not_empty

CALENDAR = BusinessCalendar("Europe/Berlin", "2024-01-01")
KWH = 1.0


@gated_asset(calendar=CALENDAR, key_prefix="berlin", audits=[not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter and business day."""
    return pd.DataFrame({"sensor_id": ["a", "b"], "kwh": [KWH, KWH]})


@gated_asset(calendar=CALENDAR, key_prefix="berlin", deps=[daily_usage], audits=[not_empty()])
def daily_total(daily_usage: pd.DataFrame) -> pd.DataFrame:
    """All meters' kWh of the day."""
    return pd.DataFrame({"kwh": [float(daily_usage["kwh"].sum())]})


@dg.asset(partitions_def=daily_partitions_for(CALENDAR), ins={"usage": dg.AssetIn(key=["berlin", "daily_usage"])})
def usage_report(usage: pd.DataFrame) -> float:
    """The team's own report over the published day."""
    return float(usage["kwh"].sum())


defs = dg.Definitions.merge(
    backfill_definitions(assets=[daily_usage, daily_total], location="berlin"),
    dg.Definitions(assets=[usage_report], jobs=[dg.define_asset_job("usage_reports", selection=[usage_report])]),
)
