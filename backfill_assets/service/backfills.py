"""``Backfills``: the one typed API under every door (the CLI, the Launchpad's jobs, a Python caller).

Each operation lives here once: the same validation, the same words and the same ledger rows whichever surface
calls it. A surface builds a ``Backfills`` for its code location, instance and catalog, names itself (the
``source`` a request records), and only parses its own input and renders the records it gets back.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.request_input import RequestInput, build_spec
from backfill_assets.engine.plan.clearing import ClearInput, clear_window
from backfill_assets.engine.plan.gc import PurgedVersion
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.handoffs import Handoff, HandoffStatus
from backfill_assets.engine.store.operations import Operation, Operations
from backfill_assets.engine.store.tries import Try, cell_tries
from backfill_assets.engine.tables.published_tables import SyncReport
from backfill_assets.engine.tables.records import TableLag

from . import cell_history, control, handoffs, reading, reconciling, registering, requests, tables, versions
from .cell_history import CellTries, CellVersions, Delivery
from .context import ServiceContext
from .handoffs import HandoffDecision
from .reading import PublishedRead
from .reconciling import Reconciliation
from .records import (
    Cancelled,
    Cleared,
    CreatedRequest,
    Paused,
    Progress,
    Request,
    RequestDetail,
    RequestPlan,
    RequestSummary,
    Resumed,
)
from .registering import Registration
from .versions import PointerChange, SkipMarks, Traced


class Backfills:
    """The service: backfill requests and their life cycle on one code location, instance and catalog (see
    ``ServiceContext``). ``backfill_assets.backfills_for_instance(defs, instance)`` builds one for a Dagster
    instance; ``Backfills(ServiceContext(graph, catalog))`` one on the catalog alone, whose operations that must
    ask Dagster (the dry run, cancel, reconcile, a cell's tries) refuse, naming what they needed."""

    def __init__(self, context: ServiceContext):
        self.context = context

    @property
    def graph(self) -> AssetGraph:
        return self.context.graph

    @property
    def catalog(self) -> Catalog:
        return self.context.catalog

    # ---- requests ----------------------------------------------------------------------------------------------

    def spec(self, asked: RequestInput) -> M.RequestSpec:
        """``asked`` validated into the frozen spec a request would hold (nothing is written)."""
        return build_spec(self.graph, self.graph.calendar.newest_complete_key(utc_now()), asked)

    def code_version(self) -> str:
        """The code version a request created now freezes (the package and the code location's files)."""
        return self.context.code_version()

    def plan(self, asked: RequestInput) -> RequestPlan:
        """The dry run: each cell's decision as the driver would take it now, and the runs; writes nothing."""
        return requests.plan(self.context, self.spec(asked))

    def create(self, asked: RequestInput) -> CreatedRequest:
        """Validate and freeze a request (its days, code version and policies); the driver carries it out."""
        return requests.create(self.context, self.spec(asked))

    def clear(self, asked: ClearInput, dry_run: bool = False) -> Cleared:
        """Airflow's clear: the selected assets' cells over the days asked, re-run as one request (``dry_run``:
        each cell's decision, nothing written)."""
        if self.context.select_assets is None:
            raise InvalidField("{select} needs the code location's Dagster definitions to resolve; build the "
                               "service with backfills_for_instance(defs, instance)")
        assets = self.context.select_assets(asked.select)
        window = clear_window(self.graph.calendar, self.graph.calendar.newest_complete_key(utc_now()), asked)
        request = asked.request_input(assets, window)
        plan = self.plan(request) if dry_run else None
        created = None if dry_run else self.create(request)
        return Cleared(select=asked.select, assets=assets, first=window.first, last=window.last,
                       days_asked=window.asked, plan=plan, created=created)

    def freeze(
        self, spec: M.RequestSpec, left_out: Mapping[tuple[str, str], str] | None = None,
        request_id: str | None = None, message: str | None = None,
    ) -> Request:
        """Freeze a spec the library built itself (a consumer cascade after a rollback, an adopted Dagster
        backfill) as a request; ``create`` is the way for what a user asks."""
        return requests.freeze(self.context, spec, left_out, request_id, message)

    def list(self, statuses: Sequence[str] = ()) -> builtins.list[RequestSummary]:
        """Every request (``statuses``: only those in these statuses, or groups ``active`` and ``closed``), newest
        first, with its pause (if paused) and its cells' counts now."""
        return requests.list_requests(self.context, statuses)

    def show(self, request_id: str) -> RequestDetail:
        """A request, its pauses, counts and every cell's decision now (a rolled-back publish shows so)."""
        return requests.show(self.context, request_id)

    def operations(self, limit: int = 200) -> builtins.list[Operation]:
        """The newest operations made through the service on this catalog, from every surface, newest first."""
        return Operations(self.catalog).all(limit)

    def progress(self, request_id: str) -> Progress:
        """Where a request stands, cheaply (status, message, counts): what ``wait`` polls."""
        return requests.progress(self.context, request_id)

    def confirm(self, request_id: str) -> Request:
        """Confirm a request made with ``confirm_cascade``, so its downstream cascade may launch."""
        return requests.confirm(self.context, request_id)

    def reconcile(self, request_id: str, verify_files: bool = False, repair: bool = False) -> Reconciliation:
        """Planned vs created vs published vs rejected / skipped / cancelled / duplicated / retrying, per cell;
        ``verify_files`` re-hashes every published file; ``repair`` records missing materializations and
        abandons versions stuck mid-write, then reports again."""
        return reconciling.reconcile(self.context, request_id, verify_files, repair)

    # ---- life cycle --------------------------------------------------------------------------------------------

    def cancel(self, request_id: str, terminate_timeout: float | None = None) -> Cancelled:
        """Stop submitting and stop the request's queued and running runs; safe to repeat."""
        return control.cancel(self.context, request_id, terminate_timeout)

    def pause(self, request_id: str, by: str, reason: str = "") -> Paused:
        """Submit nothing new; runs in flight finish and are recorded; the plan and claims stay."""
        return control.pause(self.context, request_id, by, reason)

    def resume(self, request_id: str, by: str) -> Resumed:
        """Go on where a paused request stopped (it gets back the status it had)."""
        return control.resume(self.context, request_id, by)

    # ---- versions ----------------------------------------------------------------------------------------------

    def rollback(
        self, asset: str, partition_key: str, reason: str, to_version: str | None = None, cascade: bool = False,
        by: str | None = None,
    ) -> PointerChange:
        """Move the day's pointer back to a verified version (the previous one by default) and list everyone who
        read the one taken off; ``cascade`` creates a request re-running them. ``by`` (default: the user) must be
        an approver, as for ``reject``; a version that does not verify is never restored."""
        return versions.rollback(self.context, asset, partition_key, reason, to_version, cascade, by)

    def accept(self, version_id: str, approved_by: str, reason: str, cascade: bool = False) -> PointerChange:
        """Publish a REJECTED version on a person's word (Airflow's "mark success"), recorded as an override."""
        return versions.accept(self.context, version_id, approved_by, reason, cascade)

    def register(
        self, asset: str, partition_key: str, path: str, approved_by: str, reason: str, cascade: bool = False,
    ) -> Registration:
        """Publish a day's data fixed outside the platform (the Parquet file at ``path``) only through the asset's
        blocking checks: a version of its own run, copied into the warehouse, audited and published by the same
        compare-and-swap as a computed one — or REJECTED (``published`` False, ``failed_checks`` named), the previous
        version serving on. ``approved_by`` must be an approver, as for ``accept``; ``cascade`` re-runs the readers
        of the version it replaced."""
        return registering.register(self.context, asset, partition_key, path, approved_by, reason, cascade)

    def reject(self, asset: str, partition_key: str, by: str, reason: str, cascade: bool = False) -> PointerChange:
        """Reject the current PUBLISHED version after the fact ("mark failed"): the previous verified one serves."""
        return versions.reject(self.context, asset, partition_key, by, reason, cascade)

    def skip(
        self, asset: str, by: str, reason: str, partition_key: str | None = None, from_day: str | None = None,
        to_day: str | None = None, undo: bool = False,
    ) -> SkipMarks:
        """Mark cells deliberately skipped (one day, or from_day..to_day), or withdraw the marks (``undo``)."""
        return versions.skip(self.context, asset, partition_key, from_day, to_day, by, reason, undo)

    def gc(self, older_than_days: int | None = None, dry_run: bool = False) -> builtins.list[PurgedVersion]:
        """Purge the files of non-current versions past retention (never a current version or its rollback
        target): ``older_than_days``, by default the code location's ``CleanupPolicy``; ``dry_run`` lists them."""
        return versions.gc(self.context, older_than_days, dry_run)

    def tables(self, assets: Sequence[str] | None = None) -> builtins.list[TableLag]:
        """Each published table (``BACKFILL_PUBLISHED_TABLES``) of ``assets`` (default: every gated asset): its
        position in the publish log and the days whose pointer moved after it (none: in line)."""
        return tables.status(self.context, assets)

    def sync_tables(self, assets: Sequence[str] | None = None) -> SyncReport:
        """Bring the published tables of ``assets`` to the catalog's pointers now (the daemon does it too)."""
        return tables.sync(self.context, assets)

    def serving(self, asset: str, partition_key: str) -> Version | None:
        """The version readers and downstream assets see for the day (the current pointer), or None."""
        versions.require_cell(self.context, asset, partition_key)
        return self.catalog.current(asset, partition_key)

    def read(
        self, asset: str, partition_key: str, reader: str = "python", version_id: str | None = None,
        run_id: str | None = None,
    ) -> PublishedRead:
        """The day's published data (or the verified ``version_id``'s), its files checked, the read recorded under
        ``reader`` (and ``run_id``) so ``rollback`` lists it among the consumers."""
        return reading.read(self.context, asset, partition_key, reader, version_id, run_id)

    def versions(self, asset: str, partition_key: str) -> builtins.list[Version]:
        """Every version of the day, oldest first: published, rejected, superseded, rolled back, in flight."""
        versions.require_cell(self.context, asset, partition_key)
        return self.catalog.versions_of(asset, partition_key)

    def tries(self, asset: str, partition_key: str, request_id: str | None = None) -> builtins.list[Try]:
        """Every try of the cell, oldest first (Airflow's task tries): each version written, and each Dagster run
        that was to write the cell and wrote nothing (a relaunched run, a production run that failed before
        writing), with the request that asked for it; ``request_id``'s tries marked ``this_request``."""
        versions.require_cell(self.context, asset, partition_key)
        dagster = self.context.require_dagster("a cell's tries (the Dagster runs that were to write it)")
        runs = dagster.cell_runs(self.graph, asset, partition_key)
        return cell_tries(self.catalog, asset, partition_key, request_id=request_id, runs=runs)

    def trace(self, ref: str) -> builtins.list[Traced]:
        """The version(s) an external engine's id or label names (a pod name or application id it reported, its
        version label, a version id, a logical or Dagster run id), each with its engine ids; NotFound if none."""
        return versions.trace(self.context, ref)

    # ---- a cell's history: the views the doors print (read-only) ----------------------------------------------

    def cell_versions(self, asset: str, partition_key: str) -> CellVersions:
        """The ``versions`` view of a cell: every version oldest first with its request (who, why), overrides,
        engine ids, run note, business-time interval and pointer moves, and the cell's skip mark; a side-effect
        asset's deliveries instead. ``versions`` is the plain list of ``Version`` records."""
        return cell_history.cell_versions(self.context, asset, partition_key)

    def deliveries(self, asset: str, partition_key: str) -> builtins.list[Delivery]:
        """A side-effect asset's outbox deliveries for the day (its whole state: it has no versions), oldest
        first."""
        return cell_history.deliveries(self.context, asset, partition_key)

    def cell_tries(self, request_id: str, asset: str, partition_key: str) -> CellTries:
        """``tries`` seen from one request: every try of the cell, the request's marked, and ``in_request``
        (whether the cell is one of its). An unknown request is NotFound."""
        return cell_history.request_cell_tries(self.context, request_id, asset, partition_key,
                                               lambda: self.tries(asset, partition_key, request_id))

    def request_versions(self, request_id: str) -> builtins.list[Version]:
        """Every version a request's runs wrote (any asset, any attempt), oldest first."""
        return cell_history.request_versions(self.context, request_id)

    def rollback_target(self, asset: str, partition_key: str) -> Version | None:
        """The version ``rollback`` would restore for the day now (None: nothing to go back to)."""
        return cell_history.rollback_target(self.context, asset, partition_key)

    def served(self, asset: str, first_day: str, last_day: str) -> builtins.list[PublishedRead]:
        """What the pointers serve over the days, each version's files verified, oldest first; recorded as no
        one's read (an operator's look, such as the demo comparing readers), unlike ``read``."""
        return reading.served(self.context, asset, first_day, last_day)

    # ---- handoffs ----------------------------------------------------------------------------------------------

    def handoffs(self, request_id: str | None = None, status: str | None = None) -> builtins.list[Handoff]:
        return handoffs.list_handoffs(self.context, request_id, status)

    def accept_handoff(self, handoff_id: str, by: str) -> HandoffDecision:
        """The downstream owner accepts: the driver re-runs the asset's affected days under the same request."""
        return handoffs.decide(self.context, handoff_id, HandoffStatus.ACCEPTED, by)

    def decline_handoff(self, handoff_id: str, by: str) -> HandoffDecision:
        """The downstream owner declines: nothing is re-run for the asset; reconcile shows the decision."""
        return handoffs.decide(self.context, handoff_id, HandoffStatus.DECLINED, by)

