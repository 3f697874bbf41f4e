"""Reads a run's identity (request, lane, logical run, times) from the Dagster context and run tags."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import RunIdentity, params_digest
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.settings import code_version, worker_label
from backfill_assets.engine.plan.admission import adopted_request_id


def request_id_from_tags(run_tags: Mapping[str, str]) -> str | None:
    if run_tags.get(T.REQUEST_ID):
        return run_tags[T.REQUEST_ID]
    if run_tags.get(T.DAGSTER_BACKFILL):
        # A backfill launched from the Dagster UI or CLI is adopted into the ledger under this id.
        return adopted_request_id(run_tags[T.DAGSTER_BACKFILL])
    return None


def lane_from_tags(run_tags: Mapping[str, str]) -> str:
    if run_tags.get(T.LANE):
        return run_tags[T.LANE]
    if request_id_from_tags(run_tags):
        return T.LANE_BACKFILL
    if run_tags.get("dagster/schedule_name"):
        return T.LANE_PRODUCTION
    return T.LANE_MANUAL


# run id → when the run was created. Immutable, and read for every cell a run writes (365 in a year's chunk).
_CREATED_AT: dict[str, str] = {}
_CREATED_AT_KEPT = 256


def _requested_at(context: dg.AssetExecutionContext) -> str:
    run_tags = context.run.tags
    if run_tags.get(T.REQUESTED_AT):
        return run_tags[T.REQUESTED_AT]
    if run_tags.get("dagster/scheduled_execution_time"):
        return run_tags["dagster/scheduled_execution_time"]
    run_id = context.run.run_id
    if run_id not in _CREATED_AT:
        record = context.instance.get_run_record_by_id(run_id)
        if record is None or record.create_timestamp is None:
            return iso(utc_now()) or ""
        created = record.create_timestamp
        if len(_CREATED_AT) >= _CREATED_AT_KEPT:
            _CREATED_AT.clear()
        _CREATED_AT[run_id] = iso(created if created.tzinfo else created.replace(tzinfo=timezone.utc)) or ""
    return _CREATED_AT[run_id]


def identity_from_context(
    context: dg.AssetExecutionContext,
    asset: str,
    params: Mapping[str, Any],
    partition_key: str,
    graph: AssetGraph,
) -> RunIdentity:
    run_tags = context.run.tags
    return RunIdentity(
        asset=asset,
        interval=graph.calendar.interval(partition_key),
        # The logical run is the root of a retry chain: a re-execution is a new attempt of the same run.
        logical_run_id=context.run.root_run_id or context.run.run_id,
        dagster_run_id=context.run.run_id,
        request_id=request_id_from_tags(run_tags),
        code_version=code_version(location_files=graph.code_files()),
        params_digest=params_digest({"asset": asset, **dict(params)}),
        lane=lane_from_tags(run_tags),
        requested_at=_requested_at(context),
        started_at=iso(datetime.now(timezone.utc)) or "",
        worker=worker_label(),
        params=dict(params),
    )
