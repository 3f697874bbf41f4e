"""Thin Dagster wiring over backfill_assets.core."""
