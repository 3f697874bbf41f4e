"""Dagster sensors: the backfill driver, propagation, adoption of UI backfills."""
