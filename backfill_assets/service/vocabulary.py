"""The engine's words a door needs to parse its input and render the service's records, named here so that a door
imports the service alone (tests/doors/test_door_layering.py holds the CLI and the Launchpad jobs to it).

Only values and records cross: inputs (``ClearInput``), record types a renderer names (``Report``, ``Pause``,
``Version``), the statuses a record holds (a handoff's, a catalog schema's standing) and how a status is worded
for a person.
Nothing here opens a catalog or reads a file: that is the service's operations' work.
"""

from backfill_assets.engine.plan.clearing import ClearInput
from backfill_assets.engine.plan.reconcile_records import CellReport, Report, ReportRequest
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.handoffs import ACCEPTED, DECLINED, Handoff
from backfill_assets.engine.store.pauses import Pause, status_text
from backfill_assets.engine.store.schema_version import UPGRADE_COMMAND, SchemaStanding

__all__ = [
    "ACCEPTED",
    "CellReport",
    "ClearInput",
    "DECLINED",
    "Handoff",
    "Pause",
    "Report",
    "ReportRequest",
    "SchemaStanding",
    "UPGRADE_COMMAND",
    "Version",
    "status_text",
]
