"""The engine's words a door needs to parse its input and render the service's records, named here so that a door
imports the service alone (tests/integration/test_door_layering.py holds the CLI and the Launchpad jobs to it).

Only values and records cross: inputs (``ClearInput``), record types a renderer names (``Report``, ``Pause``,
``Version``), the statuses a record holds (a handoff's, a catalog schema's standing) and how a status is worded
for a person.
Nothing here opens a catalog or reads a file: that is the service's operations' work.
"""

from backfill_assets.engine.plan.clearing import ClearInput
from backfill_assets.engine.plan.reconcile import CellReport, Report, ReportRequest
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.catalog_upgrade import ABSENT
from backfill_assets.engine.store.handoffs import ACCEPTED, DECLINED, Handoff
from backfill_assets.engine.store.pauses import Pause, status_text
from backfill_assets.engine.store.schema_version import AT_HEAD, EMPTY, NEWER, OLDER, UNVERSIONED, UPGRADE_COMMAND

__all__ = [
    "ABSENT",
    "ACCEPTED",
    "AT_HEAD",
    "CellReport",
    "ClearInput",
    "DECLINED",
    "EMPTY",
    "Handoff",
    "NEWER",
    "OLDER",
    "Pause",
    "Report",
    "ReportRequest",
    "UNVERSIONED",
    "UPGRADE_COMMAND",
    "Version",
    "status_text",
]
