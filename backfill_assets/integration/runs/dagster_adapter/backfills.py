"""Dagster backfills (listed with their cells, cancelled, counted), a code location's asset tags and the run
queue's tag limits: records Dagster 1.13 exposes only as ``dagster._core`` classes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Collection

import dagster as dg
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill

from backfill_assets.engine.model.concurrency import RunLimit, run_limits
from backfill_assets.engine.model.intervals import iso

ACTIVE = {BulkActionStatus.REQUESTED, BulkActionStatus.CANCELING, BulkActionStatus.FAILING}
CANCELLED = {BulkActionStatus.CANCELED, BulkActionStatus.CANCELING}


@dataclass(frozen=True)
class BackfillInfo:
    backfill_id: str
    status: str
    done: bool
    cancelled: bool
    tags: dict[str, str]
    created_at: str
    title: str | None
    description: str | None
    user: str | None
    cells: tuple[tuple[str, str], ...]


def list_backfills(
    instance: dg.DagsterInstance, repository_def: dg.RepositoryDefinition, limit: int = 50,
    library_assets: Collection[str] | None = None,
) -> list[BackfillInfo]:
    """The partitioned backfills of this code location, each with its cells among ``library_assets`` (by default
    every asset of the location): a backfill of a team's ordinary assets alone is none of the library's business,
    and a mixed one is the library's for its own assets only."""
    known = set(library_assets) if library_assets is not None else {
        k.to_user_string() for k in repository_def.asset_graph.get_all_asset_keys()
    }
    infos = []
    for backfill in instance.get_backfills(limit=limit):
        cells = _cells(backfill, repository_def, known)
        if cells is None:
            continue  # not a partitioned backfill of this code location's library assets
        infos.append(
            BackfillInfo(
                backfill_id=backfill.backfill_id,
                status=backfill.status.value,
                done=backfill.status not in ACTIVE,
                cancelled=backfill.status in CANCELLED,
                tags=dict(backfill.tags or {}),
                created_at=iso(datetime.fromtimestamp(backfill.backfill_timestamp, tz=timezone.utc)) or "",
                title=backfill.title,
                description=backfill.description,
                user=backfill.user,
                cells=tuple(cells),
            )
        )
    return infos


def _cells(
    backfill: PartitionBackfill, repository_def: dg.RepositoryDefinition, known: set[str]
) -> list[tuple[str, str]] | None:
    if backfill.is_asset_backfill:
        data = backfill.get_asset_backfill_data(repository_def.asset_graph)
        cells = [
            (akpk.asset_key.to_user_string(), akpk.partition_key)
            for akpk in data.target_subset.iterate_asset_partitions()
            if akpk.partition_key is not None
        ]
    else:
        job_name = backfill.job_name
        if not job_name or not repository_def.has_job(job_name) or not backfill.partition_names:
            return None
        job = repository_def.get_job(job_name)
        assets = [k.to_user_string() for k in job.asset_layer.executable_asset_keys]
        cells = [(a, p) for p in backfill.partition_names for a in assets]
    cells = [c for c in cells if c[0] in known]
    return cells or None


def backfill_partitions(instance: dg.DagsterInstance, backfill_id: str, asset_graph) -> list[str]:
    """The partition keys a Dagster backfill targets, sorted; ``asset_graph`` is any asset graph of the code
    location (a ``RepositoryDefinition``'s, or the run coordinator's workspace's)."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is None:
        return []
    if backfill.is_asset_backfill:
        data = backfill.get_asset_backfill_data(asset_graph)
        keys = {akpk.partition_key for akpk in data.target_subset.iterate_asset_partitions()}
    else:
        keys = set(backfill.partition_names or ())
    return sorted(k for k in keys if k)


def workspace_asset_tags(workspace, asset_keys) -> dict[str, dict[str, str]]:
    """The definition tags of ``asset_keys`` as the run coordinator's workspace knows them (a
    ``SubmitRunContext.workspace``: its asset graph is a ``dagster._core`` object, read through its properties)."""
    graph = workspace.asset_graph
    return {key.to_user_string(): dict(graph.get(key).tags or {}) for key in asset_keys if graph.has(key)}


def workspace_asset_owners(workspace, asset_keys) -> list[tuple[str, tuple[str, ...]]]:
    """(asset, owners) of ``asset_keys``, upstream first, as the run coordinator's workspace knows them."""
    graph, wanted = workspace.asset_graph, set(asset_keys)
    return [
        (key.to_user_string(), tuple(graph.get(key).owners or ()))
        for key in graph.toposorted_asset_keys
        if key in wanted
    ]


def cancel_backfill(instance: dg.DagsterInstance, backfill_id: str) -> str | None:
    """Ask Dagster's backfill daemon to cancel a backfill, as the UI's "Cancel backfill" does (status CANCELING:
    it launches nothing more and terminates the backfill's runs). Returns the status now, None if unknown."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is None:
        return None
    if backfill.status in ACTIVE and backfill.status is not BulkActionStatus.CANCELING:
        backfill = backfill.with_status(BulkActionStatus.CANCELING)
        instance.update_backfill(backfill)
    return backfill.status.value


def run_queue_limits(instance: dg.DagsterInstance) -> tuple[int | None, list[RunLimit]]:
    """(max_concurrent_runs, tag limits) the instance's run queue enforces; (None, []) without a queue.

    ``DagsterInstance.get_concurrency_config`` is public on the instance but returns ``dagster._core`` records;
    only their plain fields are read here.
    """
    try:
        queue = instance.get_concurrency_config().run_queue_config
    except Exception:  # an instance without a queue (or a Dagster that changed this) gets the safe answer
        return None, []
    if queue is None:
        return None, []
    return queue.max_concurrent_runs, run_limits(queue.tag_concurrency_limits)


def enforces_one_run_per_tag_value(instance: dg.DagsterInstance, tag_key: str) -> bool:
    """Whether the instance's run queue runs at most one run per distinct value of ``tag_key``."""
    _, limits = run_queue_limits(instance)
    return any(limit.key == tag_key and limit.per_value and limit.limit == 1 for limit in limits)
