"""The published tables' sensor, ``backfill_published_tables``: brings every gated asset's published tables to the
catalog's pointers. Steps sync their own asset's table as their last act; this pass is what converges a table
after a step died between its publish and its sync, after an operation run where the table's catalog was
unreachable, or after a publish made by any other process. Shipped running: a table left behind is a reader
served yesterday's answer."""

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.sensors.evaluation import SensorResource, evaluation_instance

TABLES_SENSOR = "backfill_published_tables"
TABLES_ACTOR = "backfill_published_tables sensor"
# A table behind is only behind until a step's own sync or this pass; cheap when in line (a metadata read per table).
TABLES_INTERVAL_SECONDS = 30


def build_tables_sensor(graph: AssetGraph, backfill: BackfillResource | None = None) -> dg.SensorDefinition:
    resource = SensorResource(backfill)

    @dg.sensor(
        name=TABLES_SENSOR,
        minimum_interval_seconds=TABLES_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Brings each gated asset's published tables (BACKFILL_PUBLISHED_TABLES: Iceberg by default) "
                    "in line with the catalog's pointers; a table that cannot be synced is named here.",
    )
    def backfill_published_tables(context: dg.SensorEvaluationContext):
        from backfill_assets.integration.service_wiring import backfills_for_instance

        configured = resource.get()
        service = backfills_for_instance(graph, evaluation_instance(context), configured.catalog(),
                                         M.RequestSource.DAGSTER, user=TABLES_ACTOR, warehouse=configured.warehouse(),
                                         tables=configured.published_tables())
        report = service.sync_tables()
        switched = [f"{r.table}: {len(r.days)} day(s) to seq {r.seq}" for r in report.synced if r.days]
        failed = [f"{table} not synced: {why}" for table, why in report.failed]
        return dg.SkipReason("; ".join(switched + failed) or "every published table in line")

    return backfill_published_tables

