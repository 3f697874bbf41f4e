"""backfill_assets: safe, auditable re-processing of historical data on Dagster."""

__version__ = "0.1.0"
