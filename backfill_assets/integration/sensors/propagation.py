"""Propagation sensor: reacts to publish_log (never to green runs) with each request's downstream policy."""

from datetime import timedelta

import dagster as dg

from backfill_assets.engine.model.cells import CellOrigin
from backfill_assets.engine.model.errors import NotFound
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.plan.propagation import PROPAGATION_CURSOR, plan_propagation, propagation_cursor
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.cursors import read_cursor, write_cursor
from backfill_assets.engine.store.handoffs import DEFAULT_WINDOW, UNOWNED, Handoffs
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.wakeup import wake_daemon
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.sensors import SENSOR_INTERVAL_SECONDS
from backfill_assets.integration.sensors.evaluation import SensorResource, evaluation_instance

PROPAGATION_SENSOR = "backfill_propagation"
# Rows per evaluation: a 30-day cascade over five assets is a few hundred; 10,000 drains a large burst in one.
BATCH = 10_000
# How long a publish of a Dagster backfill not adopted yet holds the cursor: the adoption sensor passes every few
# seconds; a backfill never adopted (its sensor stopped) must not stop propagation for good.
ADOPTION_GRACE = timedelta(minutes=10)


def newest_published(catalog: Catalog):
    newest = catalog.newest_published_day()
    return newest.get


def propagate_once(graph: AssetGraph, catalog: Catalog) -> dict[str, int]:
    """One evaluation: consume publish_log after the cursor. Idempotent across restarts: cells and handoffs are
    merged, not duplicated, and the cursor only moves after they are written."""
    ledger = Ledger(catalog)
    handoffs = Handoffs(catalog)
    now = utc_now()
    cursor_name = propagation_cursor(graph.location)
    cursor = read_cursor(catalog, cursor_name, missing=PROPAGATION_CURSOR)
    rows = catalog.log_after(cursor, BATCH)
    records: dict[str, object] = {}

    def request_of(request_id: str):
        if request_id not in records:
            try:
                records[request_id] = ledger.get(request_id)
            except NotFound:
                records[request_id] = None
        return records[request_id]

    cutoff = iso(now - ADOPTION_GRACE)
    plan = plan_propagation(rows, request_of, graph, newest_published(catalog), cursor, adoption_cutoff=cutoff)
    added = 0
    for request_id, cells in plan.cascades.items():
        added += ledger.add_cells(request_id, cells, origin=CellOrigin.CASCADE, reopen=True)
    for (request_id, asset), partitions in plan.handoffs.items():
        window = timedelta(seconds=request_of(request_id).spec.conf.get("handoff_window_seconds", 0)) or DEFAULT_WINDOW
        handoffs.offer(request_id, asset, ", ".join(graph[asset].owners) or UNOWNED, partitions, now, window)
    expired = handoffs.expire(now)
    if plan.cursor != cursor:
        write_cursor(catalog, cursor_name, plan.cursor)
    return {"rows": len(rows), "cascaded": added, "handoffs": len(plan.handoffs), "expired": len(expired)}


def build_propagation_sensor(graph: AssetGraph, backfill: BackfillResource | None = None) -> dg.SensorDefinition:
    resource = SensorResource(backfill)

    @dg.sensor(
        name=PROPAGATION_SENSOR,
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Applies each request's downstream policy (none | cascade | handoff) to its publishes.",
    )
    def backfill_propagation(context: dg.SensorEvaluationContext):
        stats = propagate_once(graph, resource.get().catalog())
        if stats["cascaded"]:  # the driver submits the cascaded cells at once, not at its next timer pass
            wake_daemon(evaluation_instance(context).root_directory)
        return dg.SkipReason(
            f"read {stats['rows']} publish(es); cascaded {stats['cascaded']} cell(s); "
            f"{stats['handoffs']} handoff(s) offered; {stats['expired']} expired"
        )

    return backfill_propagation
