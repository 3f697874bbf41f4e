"""The production and backfill jobs. What launches production runs: sensors/production.py.

Both select the library's own assets by key, never every asset of the code location: a team's ordinary assets
(unpartitioned, hourly, another timezone, date × region) live beside the gated ones, and a job over them all would
not even load ("Selected assets must have the same partitions definitions").
"""

from __future__ import annotations

from typing import Iterable

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.integration.keys import asset_key

PRODUCTION_JOB = "production_daily"
BACKFILL_JOB = "backfill_partition"


def library_selection(asset_names: Iterable[str]) -> dg.AssetSelection:
    """The library's assets and their blocking checks, by key."""
    return dg.AssetSelection.assets(*(asset_key(name) for name in asset_names))


def build_production_job(asset_names: Iterable[str]) -> dg.UnresolvedAssetJobDefinition:
    return dg.define_asset_job(
        PRODUCTION_JOB,
        selection=library_selection(asset_names),
        tags={T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PRIORITY: str(T.PRIORITY_PRODUCTION)},
        description="Production: every gated asset of one complete business day, launched by the production_trigger "
                    "sensor.",
    )


def build_backfill_job(asset_names: Iterable[str]) -> dg.UnresolvedAssetJobDefinition:
    """The driver's one-interval runs: any subset of the assets for one partition, tagged per request."""
    return dg.define_asset_job(
        BACKFILL_JOB,
        selection=library_selection(asset_names),
        description="Backfill: the selected gated assets of one interval, submitted by the backfill driver.",
    )
