"""Operations on published versions: rollback, a person's accept and reject (overrides), skip marks, and the
garbage collection of old versions' files. Each moves the catalog first (the truth), then tells Dagster."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.day_order import DayOrder, declared_pace
from backfill_assets.engine.model.errors import NotFound, UnsafeName, quoted
from backfill_assets.engine.model.identity import parse_version_id
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.overrides import Override, OverrideAction
from backfill_assets.engine.plan import overrides as override_plan
from backfill_assets.engine.plan.gc import PurgedVersion, collect_garbage, remove_purged_files, retention_cutoff
from backfill_assets.engine.store.catalog_records import Consumer, PointerMove, Version
from backfill_assets.engine.store.engine_refs import EngineRef, EngineRefs, validate_engine_id, versions_with_label
from backfill_assets.engine.tables.published_tables import SyncReport

from .context import ServiceContext
from .ports import DagsterPort
from .requests import freeze

# Tells Dagster of a change made without a run; returns the kind of event recorded.
DagsterReport = Callable[[DagsterPort], str]


@dataclass(frozen=True)
class PointerChange(JsonRecord):
    """A day's current pointer moved by a person (rollback, accept, reject): the version taken off, the version
    serving now, who had read the one taken off, the cascade request re-running them (if asked) and what Dagster
    recorded."""

    action: str  # rollback | accept | reject
    asset: str
    partition_key: str
    taken_off: str | None
    serving: str
    seq: int
    consumers: tuple[Consumer, ...]
    override: Override | None = None
    cascade_request_id: str | None = None
    dagster_event: str = ""
    # The published tables switched after the commit (a table that could not be is named in it, and lags).
    tables: SyncReport = field(default_factory=SyncReport)


@dataclass(frozen=True)
class SkipMarks:
    """Cells marked deliberately skipped, or (``undone``) whose marks were withdrawn."""

    asset: str
    undone: bool
    marks: tuple[Override, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        action = OverrideAction.UNSKIP if self.undone else OverrideAction.SKIP
        return {"action": str(action), "cells": [m.as_dict() for m in self.marks]}


class TraceMatch(StrEnum):
    """How a traced reference named a version (``Traced.matched_by``)."""

    VERSION_ID = "version_id"
    VERSION_LABEL = "version_label"  # RunContext.k8s_labels' backfill-assets.io/version-id
    ENGINE_ID = "engine_id"
    LOGICAL_RUN_ID = "logical_run_id"
    DAGSTER_RUN_ID = "dagster_run_id"


@dataclass(frozen=True)
class Traced:
    """A version an engine's id or label led to, with every engine id recorded for it."""

    version: Version
    matched_by: TraceMatch
    engine_refs: tuple[EngineRef, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"matched_by": str(self.matched_by), **self.version.as_dict(),
                "engine_refs": [r.as_dict() for r in self.engine_refs]}


def trace(context: ServiceContext, ref: str) -> list[Traced]:
    """The version(s) an external engine's id or label names, oldest first: a version id, the version label of its
    pods (``daily_revenue.2022-10-17.<run>.1``, or shortened to end in a digest), an engine id the engine reported
    (a pod name, an application id), or a logical or Dagster run id (every version of that run). An id that names
    none is an error."""
    ref = validate_engine_id(ref, "reference")
    found: dict[str, Traced] = {}

    def add(versions: list[Version], how: TraceMatch) -> None:
        for version in versions:
            found.setdefault(version.version_id, Traced(version, how))

    add(_version_if_any(context, ref), TraceMatch.VERSION_ID)
    add(versions_with_label(context.catalog, ref), TraceMatch.VERSION_LABEL)
    refs = EngineRefs(context.catalog)
    add(context.catalog.versions_by_id(sorted({r.version_id for r in refs.with_id(ref)})), TraceMatch.ENGINE_ID)
    add(context.catalog.versions_of_run(ref), TraceMatch.LOGICAL_RUN_ID)
    add(context.catalog.versions_of_dagster_runs([ref]), TraceMatch.DAGSTER_RUN_ID)
    if not found:
        raise NotFound(f"no version has the engine id, label, version id or run id {quoted(ref)}")
    engine_refs = refs.of_versions(list(found))
    traced = [Traced(t.version, t.matched_by, tuple(engine_refs[v])) for v, t in found.items()]
    return sorted(traced, key=lambda t: (str(t.version.created_at), t.version.version_id))


def _version_if_any(context: ServiceContext, version_id: str) -> list[Version]:
    try:
        return [context.catalog.get(version_id)]
    except (UnsafeName, NotFound):
        return []


def rollback(
    context: ServiceContext, asset: str, partition_key: str, reason: str, to_version: str | None, cascade: bool,
    by: str | None = None,
) -> PointerChange:
    """Gated as ``reject`` is: ``by`` (default: the context's user) must be an approver of the code location's
    ``AccessPolicy``, and the version restored must verify. The move, the cascade request and the trail rows commit
    in one transaction; Dagster is told after."""
    require_cell(context, asset, partition_key)
    by = context.person(by, "by")
    context.join_tables()
    with context.atomic():
        move = override_plan.rollback(context.catalog, context.warehouse, asset, partition_key, by, reason,
                                      to_version, context.graph.access)
        cascade_id = consumer_cascade(context, move.consumers_of_previous, reason, "rollback",
                                      "the rolled-back version") if cascade else None
        change = _recorded(context, _change("rollback", move, move.consumers_of_previous, None, cascade_id, ""),
                           reason, by)
    return _told(context, change, move, lambda dagster: dagster.record_rollback(context.catalog, move, reason))


def accept(context: ServiceContext, version_id: str, approved_by: str, reason: str, cascade: bool) -> PointerChange:
    asset, partition, _, _ = parse_version_id(version_id)
    require_cell(context, asset, partition)
    context.join_tables()
    with context.atomic():
        move, record = override_plan.accept(context.catalog, context.warehouse, version_id, approved_by, reason,
                                            context.graph.access, context.seen_user)
        readers = context.catalog.consumers_of(move.previous_version_id) if move.previous_version_id else []
        cascade_id = consumer_cascade(context, readers, f"{version_id}: {record.reason}", "accept",
                                      "the replaced version") if cascade else None
        change = _recorded(context, _change("accept", move, readers, record, cascade_id, ""), record.reason,
                           record.decided_by)
    return _told(context, change, move, _override_report(context, move, record))


def reject(
    context: ServiceContext, asset: str, partition_key: str, by: str, reason: str, cascade: bool
) -> PointerChange:
    require_cell(context, asset, partition_key)
    context.join_tables()
    with context.atomic():
        move, record = override_plan.reject(context.catalog, context.warehouse, asset, partition_key, by, reason,
                                            context.graph.access, context.seen_user)
        cascade_id = consumer_cascade(context, move.consumers_of_previous, f"{move.previous_version_id}: "
                                      f"{record.reason}", "reject", "the rejected version") if cascade else None
        change = _recorded(context, _change("reject", move, move.consumers_of_previous, record, cascade_id, ""),
                           record.reason, record.decided_by)
    return _told(context, change, move, _override_report(context, move, record))


def _told(context: ServiceContext, change: PointerChange, move: PointerMove, report: DagsterReport) -> PointerChange:
    """After the commit: the published tables switched, Dagster told of the move, the daemon woken for a cascade
    request."""
    tables = context.sync_tables([move.asset])
    event = tell_dagster(context, report, move.version_id, change.action)
    if change.cascade_request_id:
        context.wake()
    return replace(change, dagster_event=event, tables=tables)


def skip(
    context: ServiceContext, asset: str, partition_key: str | None, first: str | None, last: str | None, by: str,
    reason: str, undo: bool,
) -> SkipMarks:
    newest = context.graph.calendar.newest_complete_key(utc_now())
    cells = override_plan.skip_cells(context.graph, asset, partition_key, first, last, newest, undo)
    with context.atomic():
        marks = SkipMarks(asset, undo, tuple(override_plan.skip(context.catalog, cells, by, reason, undo,
                                                                context.seen_user)))
        days = [m.partition_key for m in marks.marks]
        span = days[0] if len(days) == 1 else f"{days[0]}..{days[-1]}"
        context.record("unskip" if undo else "skip", f"{asset}/{span}", f"{len(days)} cell(s)", reason=reason,
                       actor=marks.marks[0].decided_by)
    return marks


def gc(context: ServiceContext, older_than_days: int | None, dry_run: bool) -> list[PurgedVersion]:
    """The manual ``gc`` and the gc sensor alike; ``older_than_days`` None: the code location's retention."""
    if older_than_days is None:
        older_than_days = context.graph.cleanup.retention_days
    now = utc_now()
    referenced = _expire_table_snapshots(context, older_than_days, now, dry_run)
    with context.atomic():
        purged = collect_garbage(context.catalog, older_than_days, now, dry_run, referenced,
                                 assets=set(context.graph.data_assets))
        if purged and not dry_run:  # the sensor's hourly passes that find nothing leave no row in the trail
            context.record("gc", f"older than {older_than_days} day(s)", f"purged {len(purged)} version(s)")
    if not dry_run:
        remove_purged_files(context.warehouse, purged)
    return purged


def _expire_table_snapshots(context: ServiceContext, older_than_days: int, now: datetime, dry_run: bool
                            ) -> frozenset[str]:
    """The published tables' snapshots past retention expired (the tables first brought in line, so the current
    snapshot holds the pointers), and the data files their kept snapshots still reference: gc leaves those."""
    tables = context.tables
    if not tables.enabled:
        return frozenset()
    assets = context.graph.data_assets
    cutoff = retention_cutoff(now, older_than_days)
    referenced: set[str] = set()
    if not dry_run:
        tables.sync(context.catalog, assets)
    for asset in assets:
        if cutoff is not None and not dry_run:
            tables.expire(asset, cutoff)
        referenced |= tables.referenced_files(asset, cutoff)  # a dry run: as the real run would leave them
    return frozenset(referenced)


def consumer_cascade(
    context: ServiceContext, consumers: Sequence[Consumer], reason: str, kind: str, read: str
) -> str | None:
    """A new request re-running every downstream version that read a version taken off the pointer (``read``:
    which one, as the cells left out say; ``kind``: what took it off — rollback, reject, accept)."""
    cells = sorted({parse_version_id(c.consumer_version_id)[:2] for c in consumers if c.consumer_version_id})
    if not cells:
        return None
    graph = context.graph
    assets = tuple(graph.topological({a for a, _ in cells if a in graph}))
    partitions = tuple(sorted({p for _, p in cells}))
    pace = declared_pace(graph, assets, refuse_conflict=False)  # what the assets declare; no operator here
    spec = M.RequestSpec(
        assets=assets, partitions=partitions, reprocess=M.ReprocessPolicy.COMPLETED,
        max_active=pace.default_max_active, order=(pace.order or DayOrder.FORWARD).value,
        downstream=M.DownstreamPolicy.CASCADE, reason=f"{kind} cascade: {reason}", requested_by=context.user,
        wait_for_overlap=True, serial=bool(pace.serial),
    )
    not_consumers = {(a, p): f"did not read {read}" for a in assets for p in partitions if (a, p) not in cells}
    return freeze(context, spec, {**spec.excluded_cells(graph), **not_consumers}).request_id


def _recorded(context: ServiceContext, change: PointerChange, reason: str, actor: str) -> PointerChange:
    cascade = f"; cascade {change.cascade_request_id}" if change.cascade_request_id else ""
    context.record(change.action, f"{change.asset}/{change.partition_key}", f"serving {change.serving} (was "
                   f"{change.taken_off or 'nothing'}); {len(change.consumers)} consumer(s){cascade}", reason=reason,
                   actor=actor)
    return change


def require_cell(context: ServiceContext, asset: str, partition_key: str) -> None:
    context.graph.require(asset)
    context.graph.calendar.interval(partition_key)  # a business day of the partitions definition


def _change(
    action: str, move: PointerMove, consumers: Sequence[Consumer], record: Override | None, cascade_id: str | None,
    event: str,
) -> PointerChange:
    return PointerChange(action, move.asset, move.partition_key, move.previous_version_id, move.version_id,
                         move.seq, tuple(consumers), record, cascade_id, event)


def _override_report(context: ServiceContext, move: PointerMove, record: Override) -> DagsterReport:
    return lambda dagster: dagster.record_override(context.catalog, move, record)


def tell_dagster(context: ServiceContext, report: DagsterReport, version_id: str, what: str) -> str:
    """Record a pointer move (or a registration) made without a run in the Dagster instance, so the day's partition
    page names the version now serving. The catalog is the truth and has committed: a failure here (no Dagster
    given included) is reported, not raised."""
    try:
        kind = report(context.require_dagster(f"recording the {what} in Dagster"))
    except Exception as exc:  # noqa: BLE001 - the move stands whatever Dagster answers
        return f"not recorded ({type(exc).__name__}: {exc}); the catalog's {what} stands"
    return f"recorded a runless {kind} of {version_id}"
