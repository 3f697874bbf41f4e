"""The two asset events the public API cannot build: a check evaluation pointed at the materialization it judged,
and a planned materialization for an op job's day."""

from __future__ import annotations

import logging

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData,
)
from dagster._core.events import AssetMaterializationPlannedData, DagsterEvent

from backfill_assets.integration.keys import asset_key


def materialization_of_version(
    instance: dg.DagsterInstance, asset: str, partition: str, version_id: str, look_back: int = 5
) -> AssetCheckEvaluationTargetMaterializationData | None:
    """The target of a check evaluation that judged ``version_id``: the day's materialization carrying that version
    (among its latest ``look_back``; a concurrent publish may have landed after it), or None when there is none.

    ``AssetCheckResult`` computes it only in a single-partition step; this is the same record, built from the public
    ``fetch_materializations``, for the evaluations a multi-day step reports itself."""
    # Stored by this process (the shipped SQLite event log remembers it): no read at all.
    remembered = getattr(instance.event_log_storage, "stored_materialization", None)
    known = remembered(asset_key(asset), partition, version_id) if remembered is not None else None
    if known is not None:
        storage_id, run_id, timestamp = known
        return AssetCheckEvaluationTargetMaterializationData(storage_id=storage_id, run_id=run_id, timestamp=timestamp)
    # The newest first, alone: it is the step's own materialization, stored a moment ago, unless a concurrent publish
    # landed after it. Each record read is a materialization deserialized (~1.6 ms, its checks table included), and
    # a day backfilled again has older ones.
    newest = _target_among(instance, asset, partition, version_id, 1)
    if newest is not None or look_back <= 1:
        return newest
    return _target_among(instance, asset, partition, version_id, look_back)


def _target_among(
    instance: dg.DagsterInstance, asset: str, partition: str, version_id: str, limit: int
) -> AssetCheckEvaluationTargetMaterializationData | None:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=asset_key(asset), asset_partitions=[partition]), limit=limit
    ).records
    for record in records:
        value = record.asset_materialization.metadata.get("version_id") if record.asset_materialization else None
        if value is not None and value.value == version_id:
            return AssetCheckEvaluationTargetMaterializationData(
                storage_id=record.storage_id, run_id=record.run_id, timestamp=record.timestamp
            )
    return None


def report_materialization_planned(
    instance: dg.DagsterInstance, run_id: str, job_name: str, step_key: str, asset: str, partition: str
) -> None:
    """Record that run ``run_id`` is about to materialize one day of ``asset``, as an asset job's run does at launch.

    Dagster derives a day's Failed status from a planned materialization whose run failed without materializing it
    (and In progress while the run goes on); an op job plans none, so a chunk run records one per day it gates."""
    event = DagsterEvent.build_asset_materialization_planned_event(
        job_name, step_key, AssetMaterializationPlannedData(asset_key(asset), partition=partition)
    )
    instance.report_dagster_event(event, run_id=run_id, log_level=logging.DEBUG)
