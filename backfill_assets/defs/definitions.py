"""The code location: assembles assets, checks, jobs, schedules and resources."""

import dagster as dg

from backfill_assets.core.domain import DATA_ASSETS, SPECS

from .adoption import backfill_adoption
from .alert import revenue_alert
from .chunks import chunk_job
from .driver import backfill_driver
from .gated import build_gated_asset
from .jobs import backfill_job, production_job, production_schedule
from .propagation import backfill_propagation
from .resources import BackfillResource

data_assets = [build_gated_asset(SPECS[name]) for name in DATA_ASSETS]

defs = dg.Definitions(
    assets=[*data_assets, revenue_alert],
    jobs=[production_job, backfill_job, chunk_job],
    schedules=[production_schedule],
    sensors=[backfill_driver, backfill_propagation, backfill_adoption],
    resources={"backfill": BackfillResource()},
    # Steps run inside the run's own process: a run is a handful of small steps in dependency order, and a
    # fresh Python process per step (~3 s of start-up each on 2 cores) was most of a backfill's wall time.
    executor=dg.in_process_executor,
)
