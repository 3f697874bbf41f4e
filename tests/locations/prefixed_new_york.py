"""New York's meters under the key prefix ``new_york``: the same asset names as Berlin's, on the same catalog."""

import pandas as pd

from backfill_assets import BusinessCalendar, backfill_definitions, gated_asset, not_empty

CALENDAR = BusinessCalendar("America/New_York", "2024-01-01")
KWH = 2.0


@gated_asset(calendar=CALENDAR, key_prefix=["new_york"], audits=[not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter and business day."""
    return pd.DataFrame({"sensor_id": ["x", "y"], "kwh": [KWH, KWH]})


@gated_asset(calendar=CALENDAR, key_prefix=["new_york"], deps=["new_york/daily_usage"], audits=[not_empty()])
def daily_total(daily_usage: pd.DataFrame) -> pd.DataFrame:
    """All meters' kWh of the day."""
    return pd.DataFrame({"kwh": [float(daily_usage["kwh"].sum())]})


defs = backfill_definitions(assets=[daily_usage, daily_total], location="new_york")
