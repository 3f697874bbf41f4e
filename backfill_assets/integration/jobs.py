"""Jobs and the production schedule."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model import tags as T

PRODUCTION_JOB = "production_daily"

production_job = dg.define_asset_job(
    PRODUCTION_JOB,
    selection=dg.AssetSelection.all(),
    tags={T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PRIORITY: str(T.PRIORITY_PRODUCTION)},
    description="Production: every asset for the newest complete business day.",
)

BACKFILL_JOB = "backfill_partition"

# The driver's one-interval runs: any subset of the assets for one partition, tagged per request by the driver.
backfill_job = dg.define_asset_job(
    BACKFILL_JOB,
    selection=dg.AssetSelection.all(),
    description="Backfill: the selected assets of one interval, submitted by the backfill driver.",
)

# Runs at 01:00 business time for the day that just ended. Shipped STOPPED: the demo's source holds 2022 data, so
# a running schedule would publish an empty "yesterday" every night in every checkout that runs `dagster dev`.
# A deployment turns it on once (README, "Production schedule"); Dagster keeps that state in its storage.
production_schedule = dg.build_schedule_from_partitioned_job(
    production_job, hour_of_day=1, minute_of_hour=0, default_status=dg.DefaultScheduleStatus.STOPPED
)
