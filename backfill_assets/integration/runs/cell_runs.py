"""The Dagster runs that were to write one cell, whatever launched them and whether or not they wrote: what a
cell's try history adds to the catalog's versions (``engine/store/tries.py``).

Found by the tags Dagster and the driver put on runs, not by scanning runs: the runs of the day (Dagster's
partition tag) and the multi-day runs whose first day can cover it (a chunk run's first day at most
``MAX_PARTITIONS_PER_RUN`` days before; a Dagster range run's first day, any earlier one the instance has seen),
each query bounded; then kept if the run selects the asset and covers the day.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from typing import Iterator

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import iso
from backfill_assets.engine.model.request_model import MAX_PARTITIONS_PER_RUN
from backfill_assets.engine.store.tries import RunTouch
from backfill_assets.integration.runs.run_identity import lane_from_tags, request_id_from_tags
from backfill_assets.integration.runs.runs import run_assets, run_partition_keys, run_status

# The newest runs of each query: a cell tried more often than this shows its newest tries of each kind.
RUNS_LIMIT = 500
TAG_VALUES_PER_QUERY = 500  # bounded IN lists: SQLite limits bound parameters per statement


def runs_touching_cell(
    instance: dg.DagsterInstance, graph: AssetGraph, asset: str, partition_key: str
) -> list[RunTouch]:
    """Every run (newest ``RUNS_LIMIT`` per query) whose selection includes ``asset`` and whose days include
    ``partition_key``, oldest first."""
    found: dict[str, dg.RunRecord] = {}
    for tags in _candidate_tags(instance, partition_key):
        for record in instance.get_run_records(dg.RunsFilter(tags=tags), limit=RUNS_LIMIT):
            found[record.dagster_run.run_id] = record
    touches = [
        _touch(record) for record in found.values()
        if partition_key in run_partition_keys(record.dagster_run) and asset in run_assets(record.dagster_run, graph)
    ]
    return sorted(touches, key=lambda t: t.created_at or "")


def _candidate_tags(instance: dg.DagsterInstance, partition_key: str) -> Iterator[dict]:
    yield {T.DAGSTER_PARTITION: partition_key}
    earliest = (date.fromisoformat(partition_key) - timedelta(days=MAX_PARTITIONS_PER_RUN - 1)).isoformat()
    chunk_firsts = [d.isoformat() for d in _days(earliest, partition_key)]
    range_firsts = sorted(
        v for _, values in instance.get_run_tags([T.DAGSTER_RANGE_START]) for v in values if v <= partition_key
    )
    for tag, firsts in ((T.CHUNK_FIRST, chunk_firsts), (T.DAGSTER_RANGE_START, range_firsts)):
        for start in range(0, len(firsts), TAG_VALUES_PER_QUERY):
            yield {tag: firsts[start : start + TAG_VALUES_PER_QUERY]}


def _days(first: str, last: str) -> Iterator[date]:
    day, end = date.fromisoformat(first), date.fromisoformat(last)
    while day <= end:
        yield day
        day += timedelta(days=1)


def _touch(record: dg.RunRecord) -> RunTouch:
    run = record.dagster_run
    return RunTouch(
        run_id=run.run_id,
        status=run_status(run),
        lane=lane_from_tags(run.tags),
        request_id=request_id_from_tags(run.tags),
        created_at=iso(_aware(record.create_timestamp)),
        ended_at=iso(datetime.fromtimestamp(record.end_time, timezone.utc)) if record.end_time else None,
    )


def _aware(created: datetime) -> datetime:
    # Dagster's run storage returns naive UTC creation times on some backends.
    return created if created.tzinfo else created.replace(tzinfo=timezone.utc)
