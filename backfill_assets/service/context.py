"""What every operation of the service works with: the code location's graph, the catalog, Dagster (through the
``DagsterPort`` the builder hands in, or none), the warehouse, the published tables, and the surface calling."""

from __future__ import annotations

import getpass
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import BackfillError, InvalidField, InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import validate_person_name
from backfill_assets.engine.model.settings import Settings, code_version
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.operations import Operations
from backfill_assets.engine.store.transactions import atomic
from backfill_assets.engine.tables.published_tables import PublishedTables, SyncReport, published_tables_of

from .ports import DagsterPort, DrivenNow

if TYPE_CHECKING:  # the warehouse imports pandas and pyarrow: opened only by the operations that touch files
    from backfill_assets.engine.store.storage import Warehouse

# The queue a request is measured against when no Dagster instance is known: nothing lowers its max_active.
NO_RUN_QUEUE = QueueLimits(None, [], "no Dagster instance")


@dataclass(frozen=True)
class ServiceContext:
    """``source``: the surface calling (``python``, ``cli``, ``launchpad``); every request it creates records it.
    ``dagster``: the Dagster instance as the service asks of it (``ports.DagsterPort``: run facts, stopping runs,
    the run queue's limits, the daemon's wake-up, events recorded outside runs); None: the catalog alone, and an
    operation that must ask Dagster says so. ``warehouse_of`` opens the warehouse (only the operations that read
    or purge files use it; by default the settings' own); ``select_assets`` resolves a clear's asset selection
    with Dagster (the asset names, upstream first), when the surface has the code location's Dagster
    definitions."""

    graph: AssetGraph
    catalog: Catalog
    dagster: DagsterPort | None = None
    warehouse_of: Callable[[], Warehouse] = field(default=lambda: settings_warehouse())
    source: M.RequestSource = M.RequestSource.PYTHON
    # Who acts when an operation names nobody (the requester of a consumer cascade): the OS user, the UI's user.
    user: str = "unknown"
    select_assets: Callable[[str], tuple[str, ...]] | None = None
    # Who the system saw act, stored beside every stated name (a request's, an override's, a handoff decision's):
    # the OS user for the CLI, Dagster's launching user for a run; empty: ``user``.
    system_user: str = ""
    # The published tables every operation that moves a pointer brings in line after its commit (rollback, accept,
    # reject), that reconcile reports on and gc expires; by default the ones the environment's settings turn on.
    tables_of: Callable[[], PublishedTables] = field(default=lambda: published_tables_of(Settings.from_env()))
    # Opens the code location's resources of these names, as a run would have them, for as long as the block lasts
    # (``register``: the resources an asset's audits ask for); None: the surface has none to open.
    resources_of: Callable[[Sequence[str]], AbstractContextManager[Mapping[str, Any]]] | None = None

    @property
    def seen_user(self) -> str:
        return self.system_user or self.user

    def require_dagster(self, needed_for: str) -> DagsterPort:
        """The Dagster port, for an operation that cannot be done without it (``needed_for`` says which)."""
        if self.dagster is None:
            raise InvalidInput(f"{needed_for} needs Dagster's instance and this service has none: build it with "
                               "backfills_for_instance(defs, instance), or hand ServiceContext a DagsterPort")
        return self.dagster

    def queue_limits(self) -> QueueLimits:
        """What the run queue lets a request execute at once; without Dagster nothing lowers a request's own."""
        return NO_RUN_QUEUE if self.dagster is None else self.dagster.queue_limits()

    def wake(self) -> None:
        """Hint the daemon that there is new work. Without Dagster there is no daemon of ours to hint: a hint only
        saves a timer period, the ledger already holds the work."""
        if self.dagster is not None:
            self.dagster.wake_daemon()

    def drive_now(self, request_id: str) -> DrivenNow:
        """The request's first driver tick done here, so its first runs are queued before the operation returns.
        The driver sensor drives every request anyway: whatever fails here is left to it, never the operation's
        failure (the request is already committed)."""
        if self.dagster is None:
            return DrivenNow(left_to_sensor="no Dagster instance")
        try:
            return self.dagster.drive_now(self.graph, self.catalog, request_id) or DrivenNow()
        except Exception as exc:  # noqa: BLE001 - an optimisation of the sensor's work, never a failed create
            return DrivenNow(left_to_sensor=f"{type(exc).__name__}: {exc}")

    @property
    def warehouse(self) -> Warehouse:
        return self.warehouse_of()

    @property
    def tables(self) -> PublishedTables:
        return self.tables_of()

    def join_tables(self) -> None:
        """Before an operation moves pointers: a published table that can switch a day in the move's own
        transaction (PostgreSQL on the catalog's database) joins it; bad table settings are reported after."""
        try:
            self.tables.join_publishes(self.catalog)
        except BackfillError:
            pass

    def sync_tables(self, assets: Iterable[str]) -> SyncReport:
        """After a commit that moved pointers: the published tables of ``assets`` brought in line. A table that
        cannot be is reported, never raised: the pointer already moved, and the daemon's next pass converges."""
        try:
            tables = self.tables
        except BackfillError as exc:  # bad table settings: named in the report, the committed move stands
            return SyncReport(failed=(("published tables", str(exc)),))
        return tables.sync(self.catalog, assets)

    def open_resources(self, names: Sequence[str]) -> AbstractContextManager[Mapping[str, Any]]:
        """The code location's resources ``names`` for the block (none asked: nothing opened)."""
        if not names:
            return nullcontext({})
        if self.resources_of is None:
            raise InvalidInput(f"the resources {', '.join(names)} are needed and this service has none: build it "
                               "with backfills_for_instance(defs, instance) from the code location's definitions")
        return self.resources_of(names)

    def record(
        self, operation: str, target: str, outcome: str, request_id: str | None = None, reason: str | None = None,
        actor: str | None = None,
    ) -> None:
        """One row of the operations trail: what this surface did, by whom (``actor``, else the context's user)."""
        Operations(self.catalog).record(operation, self.source, actor or self.user, target, outcome, request_id,
                                        reason)

    def atomic(self) -> AbstractContextManager[object]:
        """One catalog transaction for an operation's state changes and its trail row (``record``): both commit,
        or neither does (engine/store/transactions.py)."""
        return atomic(self.catalog.engine)

    def person(self, name: object, field: str) -> str:
        """``name`` as a person's name (``field``: the service's field, as the error names it), checked before
        anything is written; None or empty: this context's user, checked the same way."""
        if name is None or (isinstance(name, str) and not name):
            name, field = self.user, "user"
        if isinstance(name, str) and not name.strip():
            raise InvalidField("{%s} must name someone" % field)
        return validate_person_name(name, "{%s}" % field, blank_ok=False)

    def code_version(self) -> str:
        """The code version a request created now freezes (the package and the code location's files)."""
        return code_version(sources=self.graph.code_sources)


def settings_warehouse() -> Warehouse:
    """The warehouse the environment's settings name (imported here: most operations never open it)."""
    from backfill_assets.engine.store.storage import Warehouse

    return Warehouse(Settings.from_env().warehouse_root)


def os_user() -> str:
    """Who is acting, when nobody said: the OS user."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no passwd entry in some containers
        return "unknown"
