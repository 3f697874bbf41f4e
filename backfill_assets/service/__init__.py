"""The service layer: one typed API for every operation on backfill requests, under every door.

    from backfill_assets import backfills_for_instance
    from backfill_assets.service import RequestInput

    backfills = backfills_for_instance(defs, dg.DagsterInstance.get())
    plan = backfills.plan(RequestInput(assets=["daily_revenue"], from_day="2022-10-01", to_day="2022-10-31"))
    created = backfills.create(RequestInput(..., reason="FX fix", requested_by="ana"))
    cleared = backfills.clear(ClearInput(select="+daily_revenue", partition_key="2022-10-17", future=True))

Inputs are lists, enums, dates and parsed conf; outputs are frozen records (``records.py``); errors are the
library's exceptions, ``InvalidField`` naming the input's fields (``to_day``) so each surface can word them its
own way (``--to`` on the CLI).

The service imports neither Dagster nor the integration: it declares what it asks of Dagster (``ports.DagsterPort``)
and whoever builds it hands that in (``backfills_for_instance`` in ``integration/service_wiring.py``).
"""

from backfill_assets.engine.model.errors import FieldMessage, InvalidField, RefusedField
from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.model.request_input import RequestInput
from backfill_assets.engine.model.request_model import (
    CellDecision,
    DownstreamPolicy,
    Order,
    PerRunMode,
    ReprocessPolicy,
    RequestSource,
    RequestSpec,
    RequestStatus,
)
from backfill_assets.engine.model.states import RunStatus, VersionState
from backfill_assets.engine.plan.clearing import ClearInput
from backfill_assets.engine.plan.gc import PurgedVersion
from backfill_assets.engine.plan.planning import PlanAction
from backfill_assets.engine.plan.reconcile_downstream import SentDelivery, SideEffectCell, SideEffectStatus, StaleCell
from backfill_assets.engine.plan.reconcile_records import (
    CellReport,
    Report,
    ReportGap,
    ReportRequest,
    ReportRun,
    ReportTotals,
    VersionReport,
)
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.handoffs import Handoff, HandoffStatus
from backfill_assets.engine.store.operations import Operation
from backfill_assets.engine.store.pauses import Pause
from backfill_assets.engine.store.tries import Try, TryCheck
from backfill_assets.engine.tables.published_tables import SyncReport
from backfill_assets.engine.tables.records import SyncResult, TableLag

from .backfills import Backfills
from .cell_history import CellTries, CellVersions, Delivery, PointerEvent, VersionEntry
from .handoffs import HandoffDecision
from .reading import PublishedRead
from .reconciling import Reconciliation, Repair, RepairAction, TableNotSynced, TableSynced, VersionRepair
from .records import (
    Cancelled,
    Cleared,
    CreatedRequest,
    Paused,
    PlannedCell,
    PlannedRun,
    Progress,
    Request,
    RequestDetail,
    RequestPlan,
    RequestSummary,
    Resumed,
)
from .registering import Registration
from .versions import PointerChange, SkipMarks, Traced, TraceMatch

__all__ = [
    "Backfills",
    "Cancelled",
    "CellDecision",
    "CellReport",
    "CellTries",
    "CellVersions",
    "Cleared",
    "ClearInput",
    "CreatedRequest",
    "Delivery",
    "DownstreamPolicy",
    "FieldMessage",
    "Handoff",
    "HandoffDecision",
    "HandoffStatus",
    "InvalidField",
    "Operation",
    "Order",
    "Override",
    "Pause",
    "Paused",
    "PerRunMode",
    "PlanAction",
    "PlannedCell",
    "PlannedRun",
    "PointerChange",
    "PointerEvent",
    "Progress",
    "PublishedRead",
    "PurgedVersion",
    "Reconciliation",
    "RefusedField",
    "Registration",
    "Repair",
    "RepairAction",
    "Report",
    "ReportGap",
    "ReportRequest",
    "ReportRun",
    "ReportTotals",
    "ReprocessPolicy",
    "Request",
    "RequestDetail",
    "RequestInput",
    "RequestPlan",
    "RequestSource",
    "RequestSpec",
    "RequestStatus",
    "RequestSummary",
    "Resumed",
    "RunStatus",
    "SentDelivery",
    "SideEffectCell",
    "SideEffectStatus",
    "SkipMarks",
    "StaleCell",
    "SyncReport",
    "SyncResult",
    "TableLag",
    "TableNotSynced",
    "TableSynced",
    "Traced",
    "TraceMatch",
    "Try",
    "TryCheck",
    "Version",
    "VersionEntry",
    "VersionRepair",
    "VersionReport",
    "VersionState",
]
