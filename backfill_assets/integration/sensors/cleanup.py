"""The gc sensor, ``backfill_cleanup``: reclaims the files of rejected, superseded, rolled-back and abandoned versions
once they are older than the code location's retention (``backfill_definitions(cleanup=CleanupPolicy(...))``). It is
the manual ``gc`` operation of the service on a timer: a current version and the version a rollback would restore
are never touched, and the catalog rows stay (state PURGED) for the audit trail.

Shipped stopped: reclaiming files is irreversible, so a team turns it on (the UI's Sensors page, or ``dagster sensor
start backfill_cleanup``) once it has chosen its retention.
"""

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.sensors.evaluation import SensorResource, evaluation_instance

GC_SENSOR = "backfill_cleanup"
# Who the operations trail names for the sensor's purges.
GC_ACTOR = "backfill_cleanup sensor"
# Retention is counted in days: an hourly pass is soon enough, and cheap (one indexed query when nothing is due).
GC_INTERVAL_SECONDS = 3600


def build_gc_sensor(graph: AssetGraph, backfill: BackfillResource | None = None) -> dg.SensorDefinition:
    resource = SensorResource(backfill)

    @dg.sensor(
        name=GC_SENSOR,
        minimum_interval_seconds=GC_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=(f"Reclaims the files of non-current versions older than {graph.cleanup.retention_days} day(s) "
                     "(never a current version or its rollback target). Stopped until you start it."),
    )
    def backfill_cleanup(context: dg.SensorEvaluationContext):
        from backfill_assets.integration.service_wiring import backfills_for_instance

        configured = resource.get()
        service = backfills_for_instance(graph, evaluation_instance(context), configured.catalog(),
                                         M.RequestSource.DAGSTER, user=GC_ACTOR, warehouse=configured.warehouse(),
                                         tables=configured.published_tables())
        purged = service.gc(None)
        return dg.SkipReason(f"purged {len(purged)} version(s) older than {graph.cleanup.retention_days} day(s)"
                             + "".join(f"; {p.version_id} ({p.state})" for p in purged[:20]))

    return backfill_cleanup
