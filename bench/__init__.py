"""Benchmarks: the same backfill done by a plain loop, naive Dagster, Airflow 3 and backfill_assets.

Entry point: ``python -m bench.run`` (``make bench``). Nothing here is imported by the product or its tests.
"""
