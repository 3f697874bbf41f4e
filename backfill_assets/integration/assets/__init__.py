"""Dagster assets and ops: gated assets, side-effect assets, batched chunk runs, partitions."""
