"""Reads a run's identity (request, lane, logical run, times) from the Dagster context and run tags."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import RunIdentity, params_digest
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.logical_run import LogicalRun, logical_run_of
from backfill_assets.engine.model.settings import code_version, worker_label
from backfill_assets.engine.plan.admission import adopted_request_id
from backfill_assets.engine.store.catalog_queries import CatalogQueries
from backfill_assets.integration.step_context import StepContext


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


def _requested_at(context: StepContext) -> str:
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


# (run id, asset, code version, params digest) → its logical run: read once per step, not once per day of a range.
_LOGICAL_RUNS: dict[tuple[str, str, str, str], LogicalRun] = {}
_LOGICAL_RUNS_KEPT = 256
# A re-execution of a re-execution of …: a bound, so a corrupt parent link cannot loop.
_CHAIN_LIMIT = 100


def computation_of(graph: AssetGraph, asset: str, params: Mapping[str, Any]) -> tuple[str, str]:
    """(code version, params digest) of computing ``asset`` with ``params`` in this process."""
    return code_version(sources=graph.code_sources), params_digest({"asset": asset, **dict(params)})


def reexecuted_runs(instance: dg.DagsterInstance, run: dg.DagsterRun) -> list[str]:
    """The runs ``run`` re-executes: its parent, the parent's parent, … up to the root; nearest first."""
    chain: list[str] = []
    parent_id = run.parent_run_id
    while parent_id and parent_id not in chain and len(chain) < _CHAIN_LIMIT:
        chain.append(parent_id)
        parent = instance.get_run_by_id(parent_id)
        parent_id = parent.parent_run_id if parent is not None else None
    return chain


def logical_run_for(
    instance: dg.DagsterInstance,
    run: dg.DagsterRun,
    catalog: CatalogQueries,
    asset: str,
    computation: tuple[str, str],
) -> LogicalRun:
    """The logical run of computing ``asset`` with ``computation`` (code version, params digest) in ``run``:
    another attempt when its chain computed the asset the same way, else a new run (engine/model/logical_run)."""
    key = (run.run_id, asset, *computation)
    if key not in _LOGICAL_RUNS:
        chain = reexecuted_runs(instance, run) if run.root_run_id else []
        written = catalog.versions_of_dagster_runs(chain) if chain else []
        earlier = sorted((v for v in written if v.asset == asset), key=lambda v: str(v.created_at or ""))
        if len(_LOGICAL_RUNS) >= _LOGICAL_RUNS_KEPT:
            _LOGICAL_RUNS.clear()
        _LOGICAL_RUNS[key] = logical_run_of(run.run_id, run.root_run_id, earlier, *computation)
    return _LOGICAL_RUNS[key]


def identity_from_context(
    context: StepContext,
    asset: str,
    params: Mapping[str, Any],
    partition_key: str,
    graph: AssetGraph,
    catalog: CatalogQueries,
) -> RunIdentity:
    run_tags = context.run.tags
    computation = computation_of(graph, asset, params)
    return RunIdentity(
        asset=asset,
        interval=graph.calendar.interval(partition_key),
        # A re-execution is another attempt of the run it re-executes only when it computes the same way.
        logical_run_id=logical_run_for(context.instance, context.run, catalog, asset, computation).logical_run_id,
        dagster_run_id=context.run.run_id,
        request_id=request_id_from_tags(run_tags),
        code_version=computation[0],
        params_digest=computation[1],
        lane=lane_from_tags(run_tags),
        requested_at=_requested_at(context),
        started_at=iso(datetime.now(timezone.utc)) or "",
        worker=worker_label(),
        params=dict(params),
        location=graph.location,
    )
