"""The production and backfill jobs. What launches production runs: sensors/production.py."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model import tags as T

PRODUCTION_JOB = "production_daily"

production_job = dg.define_asset_job(
    PRODUCTION_JOB,
    selection=dg.AssetSelection.all(),
    tags={T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PRIORITY: str(T.PRIORITY_PRODUCTION)},
    description="Production: every asset of one complete business day, launched by the production_trigger sensor.",
)

BACKFILL_JOB = "backfill_partition"

# The driver's one-interval runs: any subset of the assets for one partition, tagged per request by the driver.
backfill_job = dg.define_asset_job(
    BACKFILL_JOB,
    selection=dg.AssetSelection.all(),
    description="Backfill: the selected assets of one interval, submitted by the backfill driver.",
)
