"""One of two code locations sharing one instance and one catalog, each declaring ``daily_usage``."""

import pandas as pd

from backfill_assets import BusinessCalendar, backfill_definitions, gated_asset, not_empty

KWH = 1.0


@gated_asset(calendar=BusinessCalendar("Europe/Berlin", "2024-01-01"), audits=[not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter and business day."""
    return pd.DataFrame({"sensor_id": ["a", "b"], "kwh": [KWH, KWH]})


# Both modules are in one package (the default location name): each names its location.
defs = backfill_definitions(assets=[daily_usage], location="berlin")
