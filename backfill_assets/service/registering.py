"""``register``: a day's data fixed outside the platform, published only through the asset's own checks.

Airflow's "mark success" on a task whose data someone repaired by hand says nothing about the data. Here the file
becomes a version like any computed one (``engine/wap/registration.py``): its own run and location, the asset's
blocking checks and file integrity, the publish compare-and-swap — or REJECTED, the previous version serving on.
Who approved it and why is an ``overrides`` row beside the version (``register``), written in the transaction of
the publish or the rejection with the operation's trail row; the published tables switch and Dagster is told after
the commit, as for ``accept``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from backfill_assets.engine.model.errors import BackfillError, InvalidInput, quoted
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.overrides import Override, validate_person, validate_reason
from backfill_assets.engine.model.settings import worker_label
from backfill_assets.engine.store.catalog_records import Consumer, Version
from backfill_assets.engine.tables.published_tables import SyncReport

from .context import ServiceContext
from .versions import consumer_cascade, tell_dagster

if TYPE_CHECKING:  # write-audit-publish brings pandas and pyarrow: imported by a registration, not by the service
    from backfill_assets.engine.wap.audit import CheckOutcome
    from backfill_assets.engine.wap.gate import GateOutcome
    from backfill_assets.engine.wap.registration import RegisteredFile


@dataclass(frozen=True)
class Registration:
    """A file registered as a day of an asset: the version it became, whether its checks let it publish (the
    pointer moved from ``taken_off`` to it) or rejected it (``serving`` is still what served before), the checks'
    results, the file it was made from, who approved it and why, who had read the version it replaced, and what
    the published tables and Dagster recorded after the commit."""

    asset: str
    partition_key: str
    version_id: str
    state: str
    published: bool
    serving: str | None  # the version serving the day now
    taken_off: str | None  # published: the version it replaced
    seq: int | None  # published: its publish_log row
    rows: int
    sha256: str
    source: dict[str, Any]  # the file as given: its name, sha256, bytes and rows (never its folder)
    checks: tuple[CheckOutcome, ...]
    override: Override  # who approved registering it, and why
    error: str | None = None  # rejected: which checks failed (or the publish race it lost)
    consumers: tuple[Consumer, ...] = ()  # readers of the version it replaced
    cascade_request_id: str | None = None
    dagster_event: str = ""
    tables: SyncReport = field(default_factory=SyncReport)

    @property
    def failed_checks(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.checks if not c.passed)

    def summary(self) -> str:
        if self.published:
            return f"registered {self.version_id}: published, replacing {self.taken_off or 'nothing'}"
        return (f"registered {self.version_id}: REJECTED — {self.error}; still serving "
                f"{self.serving or 'nothing (no version published yet)'}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "asset": self.asset, "partition_key": self.partition_key, "version_id": self.version_id,
            "state": self.state, "published": self.published, "serving": self.serving, "taken_off": self.taken_off,
            "seq": self.seq, "rows": self.rows, "sha256": self.sha256, "source": dict(self.source),
            "checks": [c.as_dict() for c in self.checks], "failed_checks": list(self.failed_checks),
            "error": self.error, "override": self.override.as_dict(),
            "consumers": [c.__dict__ for c in self.consumers], "cascade_request_id": self.cascade_request_id,
            "dagster_event": self.dagster_event, "tables": self.tables.as_dict(),
        }


def register_resources(graph: AssetGraph) -> frozenset[str]:
    """Every resource of the code location an asset's audits ask for: what ``register`` may need opened (a
    registered file is judged by its asset's audits), so a door that runs it (the Launchpad's job) provides them."""
    from backfill_assets.engine.wap.registration import audit_resources

    return frozenset(r for spec in graph if spec.is_data_asset for r in audit_resources(spec))


def register(
    context: ServiceContext, asset: str, partition_key: str, path: str, approved_by: str, reason: str,
    cascade: bool = False,
) -> Registration:
    """Every input checked before anything is written (the asset, the day, the approver — an approver of the code
    location's ``AccessPolicy`` as for ``accept`` —, the reason, then the file and what its checks need); then the
    gate: begin, write, audit, and publish or reject in one transaction with the override and trail rows."""
    from backfill_assets.engine.wap.compute import published_inputs
    from backfill_assets.engine.wap.gate import Gate
    from backfill_assets.engine.wap.registration import (
        audit_resources,
        read_registered_file,
        refuse_unjudgeable,
        registration_identity,
        registration_run_id,
    )

    graph = context.graph
    spec = graph.require(asset, data_only=False)
    if spec.side_effect:
        raise InvalidInput(f"asset {quoted(asset)} is a side-effect asset: it sends messages and has no data to "
                           "register; nothing changed")
    graph.calendar.interval(partition_key)  # a business day of the partitions definition
    approved_by = validate_person(approved_by, "{approved_by}")
    reason = validate_reason(reason)
    graph.access.require_approver(approved_by, f"registering a file as {asset} {partition_key}")
    source = read_registered_file(path, asset, partition_key)
    needed = audit_resources(spec)
    with context.open_resources(needed) as resources:
        refuse_unjudgeable(context.catalog, graph, spec, partition_key, resources)
        context.join_tables()
        now = utc_now()
        identity = registration_identity(graph, asset, partition_key, registration_run_id(now), None,
                                         context.code_version(), source, now, worker_label())
        gate = Gate(context.catalog, context.warehouse, spec, identity, before_publish=_preparers(context))
        gate.begin()
        try:
            checks = gate.write_and_audit(source.frame, published_inputs(gate, graph, resources),
                                          extra_manifest={"registered": {**source.as_dict(), "approved_by":
                                                                         approved_by, "reason": reason}})
            with context.atomic():
                outcome = gate.conclude(checks)
                done = _recorded(context, outcome, source, approved_by, reason, cascade)
        except BaseException as exc:
            gate.abandon_if_unfinished(f"register: {type(exc).__name__}: {exc}")
            raise
    return _told(context, done, outcome)


def _preparers(context: ServiceContext) -> list[Callable[[Version], Any]]:
    try:
        return context.tables.preparers()
    except BackfillError:  # bad table settings: the version publishes, the sync after the commit names them
        return []


def _recorded(
    context: ServiceContext, outcome: GateOutcome, source: RegisteredFile, approved_by: str, reason: str,
    cascade: bool,
) -> Registration:
    """Inside the publish's (or rejection's) transaction: the override row, the consumers of the version replaced,
    the cascade request (if asked) and the trail row."""
    version, move = outcome.version, outcome.move
    record = context.catalog.record_registration(version.version_id, version.asset, version.partition_key,
                                                 approved_by, reason, move.seq if move else None,
                                                 context.seen_user)
    taken_off = move.previous_version_id if move else None
    readers = tuple(context.catalog.consumers_of(taken_off)) if taken_off else ()
    cascade_id = (consumer_cascade(context, readers, f"{version.version_id}: {reason}", "register",
                                   "the replaced version") if cascade and readers else None)
    done = Registration(
        version.asset, version.partition_key, version.version_id, version.state, outcome.published,
        outcome.serving_version_id, taken_off, move.seq if move else None, int(version.rows or 0),
        str(version.sha256 or ""), source.as_dict(), tuple(outcome.checks), record, outcome.error, readers,
        cascade_id,
    )
    context.record("register", f"{version.asset}/{version.partition_key}", _outcome_line(done), reason=reason,
                   actor=approved_by)
    return done


def _outcome_line(done: Registration) -> str:
    if done.published:
        cascade = f"; cascade {done.cascade_request_id}" if done.cascade_request_id else ""
        return (f"published {done.version_id} (was {done.taken_off or 'nothing'}); {len(done.consumers)} "
                f"consumer(s){cascade}")
    return f"REJECTED {done.version_id}: {done.error}; serving {done.serving or 'nothing'}"


def _told(context: ServiceContext, done: Registration, outcome: GateOutcome) -> Registration:
    """After the commit: the published tables switched (a publish), Dagster told of the version (a runless
    materialization with its checks, or the rejected version's observation), the daemon woken for a cascade."""
    tables = context.sync_tables([done.asset]) if done.published else SyncReport()
    event = tell_dagster(context, lambda dagster: dagster.record_registration(outcome, done.override),
                         done.version_id, "register")
    if done.cascade_request_id:
        context.wake()
    return replace(done, dagster_event=event, tables=tables)
