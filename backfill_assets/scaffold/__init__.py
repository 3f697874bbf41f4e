"""``backfill-assets init``: the files a Dagster project needs to use the library (no Dagster import)."""
