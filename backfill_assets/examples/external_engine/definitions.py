"""meter_readings, computed by an external process (compute_meters.py) through Dagster Pipes; daily_usage reads
its published versions in process. Business days in Berlin (2024-03-31 is 23 hours long)."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import pandas as pd

from backfill_assets import (
    BusinessCalendar,
    audit,
    backfill_definitions,
    gated_asset,
    not_empty,
    row_count,
    run_external,
    unique_key,
)

calendar = BusinessCalendar("Europe/Berlin", "2024-01-01")
METERS = ("m1", "m2", "m3")
# The external program: any command works; this one is a plain Python script using dagster_pipes only.
SCRIPT = Path(__file__).with_name("compute_meters.py")


class MeterJob(dg.Config):
    """What the external job is asked to do; ``corrupt`` makes it write a bad output (a drill for the gate)."""

    corrupt: bool = False


@audit
def no_negative_usage(frame: pd.DataFrame) -> bool:
    """No meter reports negative consumption."""
    return bool((frame["kwh"] >= 0).all())


@gated_asset(
    calendar=calendar,
    audits=[
        unique_key("meter_id", "hour"),
        # One reading per meter and hour of the interval: 23 x 3 on a spring-forward day.
        row_count(lambda interval: len(METERS) * int(interval.duration.total_seconds() // 3600)),
        no_negative_usage,
    ],
    config=MeterJob,
)
def meter_readings(run, config: MeterJob, pipes_subprocess_client: dg.PipesSubprocessClient) -> pd.DataFrame:
    """Hourly meter readings, computed by an external process that writes into the version's own location."""
    return run_external(
        run, pipes_subprocess_client, command=[sys.executable, str(SCRIPT)], extras={"corrupt": config.corrupt}
    )


@gated_asset(calendar=calendar, deps=[meter_readings], audits=[unique_key("meter_id"), not_empty()])
def daily_usage(meter_readings: pd.DataFrame) -> pd.DataFrame:
    """kWh per meter and business day, from the published readings."""
    # as_index=False: a DataFrame (pandas-stubs type every groupby column's sum as a Series).
    return meter_readings.groupby("meter_id", as_index=False)["kwh"].sum()  # type: ignore[return-value]


defs = backfill_definitions(
    assets=[meter_readings, daily_usage],
    resources={"pipes_subprocess_client": dg.PipesSubprocessClient()},
)
