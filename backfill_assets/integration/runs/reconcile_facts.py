"""What reconcile needs from Dagster: run statuses, which published versions it holds materializations of, forced
cancels."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Iterable, Mapping

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.states import RunStatus
from backfill_assets.engine.plan.reconcile_records import Report
from backfill_assets.engine.plan.request_cells import RequestCells
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version, VersionRun
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.runs.cancel import forced_cancels
from backfill_assets.integration.runs.runs import run_status, runs_of_request
from backfill_assets.service.ports import RequestRunFacts
from backfill_assets.service.reconciling import report_of

if TYPE_CHECKING:  # the warehouse module imports pandas and pyarrow: only where files are read
    from backfill_assets.engine.store.storage import Warehouse


def run_statuses(instance: dg.DagsterInstance, run_ids: Iterable[str]) -> dict[str, RunStatus]:
    """Each run's status name, for the runs Dagster has (200 ids per query)."""
    ids = sorted(set(run_ids))
    statuses: dict[str, RunStatus] = {}
    for start in range(0, len(ids), 200):
        for run in instance.get_runs(filters=dg.RunsFilter(run_ids=ids[start : start + 200])):
            statuses[run.run_id] = run_status(run)
    return statuses


def carried_version_ids(instance: dg.DagsterInstance, cells: Iterable[tuple[str, str]]) -> set[str]:
    """Version ids carried by Dagster materializations of these cells (including runless repairs): every one of
    their materializations read back, ~1 ms each (Dagster deserializes the whole event)."""
    by_asset: dict[str, set[str]] = {}
    for asset, partition in cells:
        by_asset.setdefault(asset, set()).add(partition)
    found: set[str] = set()
    for asset, partitions in by_asset.items():
        cursor = None
        while True:
            result = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=asset_key(asset), asset_partitions=sorted(partitions)),
                limit=1000,
                cursor=cursor,
            )
            for record in result.records:
                materialization = record.asset_materialization
                value = materialization.metadata.get("version_id") if materialization else None
                if value is not None:
                    found.add(str(value.value))
            if not result.has_more:
                break
            cursor = result.cursor
    return found


def materialized_version_ids(
    instance: dg.DagsterInstance, versions: Iterable[VersionRun], statuses: Mapping[str, RunStatus],
    overridden: set[str],
) -> set[str]:
    """Which of these versions' published ones Dagster holds a materialization of.

    A version is known to be held without reading its events back when its own run published it and succeeded:
    the step that publishes a version yields its materialization before the step, hence the run, can succeed. So:
    its run ended SUCCESS, it is the only version that run published of its day (a retry inside the run that
    published again leaves a doubt), no override (accept, registration) published it outside its run, and Dagster
    holds a materialization of that day at all (a wiped day is looked at). Every other published version (a run
    that died between the catalog's publish and its event: the gap reconcile is for) is looked up in its days'
    materializations, as each one was before; reading all of them back cost ~10 s at ten years of three assets."""
    published = [v for v in versions if v.published]
    per_run_day = Counter((v.dagster_run_id, v.asset, v.partition_key) for v in published)
    assets = {v.asset for v in published}
    days_held = {asset: instance.get_materialized_partitions(asset_key(asset)) for asset in assets}
    known = {
        v.version_id for v in published
        if statuses.get(v.dagster_run_id) == RunStatus.SUCCESS
        and per_run_day[(v.dagster_run_id, v.asset, v.partition_key)] == 1
        and v.version_id not in overridden
        and v.partition_key in days_held[v.asset]
    }
    doubtful = [(v.asset, v.partition_key) for v in published if v.version_id not in known]
    return known | (carried_version_ids(instance, doubtful) if doubtful else set())


def request_run_facts(
    instance: dg.DagsterInstance, catalog: Catalog, request_id: str, read: RequestCells | None = None
) -> RequestRunFacts:
    """Dagster's facts about a request for reconcile: its runs' and its versions' runs' statuses, the version ids
    of its published versions that Dagster holds materializations of, and the runs whose cancellation was forced.
    ``read``: the request's cells and overrides when the caller has read them (else read here)."""
    read = read if read is not None else RequestCells.read(catalog, request_id)
    cells, overrides = read.cells, read.overrides
    runs = runs_of_request(instance, request_id)
    versions = catalog.version_runs_of_request(request_id)
    statuses = run_statuses(instance, [r.run_id for r in runs] + [v.dagster_run_id for v in versions])
    overridden = {o.version_id for of_cell in overrides.values() for o in of_cell if o.version_id}
    return RequestRunFacts(
        run_statuses=statuses,
        materialized_version_ids=frozenset(materialized_version_ids(instance, versions, statuses, overridden)),
        forced_cancels=forced_cancels(instance, _maybe_forced(runs, cells)),
    )


def request_report(
    instance: dg.DagsterInstance,
    catalog: Catalog,
    graph: AssetGraph,
    request_id: str,
    warehouse: Warehouse | None = None,
) -> Report:
    """The request's reconcile report with Dagster's facts (run statuses, materializations); ``warehouse``
    re-hashes its published files. The service's ``report_of``, for a caller holding an instance."""
    return report_of(catalog, graph, request_id, request_run_facts(instance, catalog, request_id), warehouse)


def _maybe_forced(runs: list[dg.DagsterRun], cells: list[Cell]) -> list[dg.DagsterRun]:
    """The runs whose cancellation may have been forced: CANCELED ones, and FAILURE ones of cancelled cells (a
    forced run's worker can end it FAILURE after the mark); not every failed run of a request."""
    of_cancelled_cells = {c.dagster_run_id for c in cells if c.decision == M.CELL_CANCELLED}
    return [
        r for r in runs
        if r.status == dg.DagsterRunStatus.CANCELED
        or (r.status == dg.DagsterRunStatus.FAILURE and r.run_id in of_cancelled_cells)
    ]


def record_lost_materialization(instance: dg.DagsterInstance, version: Version) -> None:
    """Record the materialization of a version the catalog published and Dagster never heard of (the run died
    between the publish and its event): reconcile's repair of that gap."""
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=asset_key(version.asset),
            partition=version.partition_key,
            description="repaired by backfill-assets reconcile: published in the catalog, event was lost",
            metadata={
                "version_id": version.version_id,
                # A published version was written to its path; the catalog's column is nullable for one never written.
                "path": dg.MetadataValue.path(version.path or ""),
                "rows": int(version.rows or 0),
                "sha256": version.sha256 or "",
                "logical_run_id": version.logical_run_id,
                "request_id": version.request_id or "",
                "published_at": version.published_at or "",
                "repaired": True,
            },
        )
    )
