"""N, naive Dagster: a minimal code location, backfilled with Dagster's own asset backfill."""
