"""What one cell has been through: every version with who asked for it, what it ran as and when the pointer moved
to it (``versions``), a side-effect asset's deliveries, and every try of the cell seen from one request.

These are read-only views, built here once so every door shows the same facts: the CLI's ``versions`` and
``request show --cell`` print these records (text, or each record's ``as_dict`` with ``--json``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from backfill_assets.engine.model.intervals import in_zone
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.logical_run import differences
from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.engine_refs import EngineRef, EngineRefs
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.store.outbox import deliveries as outbox_rows
from backfill_assets.engine.store.tries import Try, cell_tries

from .context import ServiceContext


@dataclass(frozen=True)
class PointerEvent:
    """A move of the cell's pointer to a version: its publish, or a later restore by a rollback."""

    seq: int
    action: str
    at: Any
    previous_version_id: str | None
    reason: str | None


@dataclass(frozen=True)
class VersionEntry:
    """One version of a cell as ``versions`` shows it: the version, whether it serves, how it relates to the one
    before, the request that made it (none: a production or manual run), a person's overrides of it, what an
    external engine ran it as, its interval in the business timezone and when the pointer moved to it."""

    version: Version
    current: bool
    run_note: str
    requested_by: str | None
    request_reason: str | None
    overrides: tuple[Override, ...]
    engine_refs: tuple[EngineRef, ...]
    timezone: str
    interval_start_local: str | None
    interval_end_local: str | None
    history: tuple[PointerEvent, ...]

    def as_dict(self) -> dict[str, Any]:
        """The version's own fields, then what the view adds (``versions --json`` prints a list of these)."""
        return {
            **self.version.as_dict(), "current": self.current, "run_note": self.run_note,
            "requested_by": self.requested_by, "request_reason": self.request_reason,
            "overrides": [o.as_dict() for o in self.overrides], "engine_refs": [r.as_dict() for r in self.engine_refs],
            "timezone": self.timezone, "interval_start_local": self.interval_start_local,
            "interval_end_local": self.interval_end_local, "history": [asdict(h) for h in self.history],
        }


@dataclass(frozen=True)
class Delivery(JsonRecord):
    """One outbox row of a side-effect asset (which has no versions: its deliveries are its state)."""

    idempotency_key: str
    asset: str
    partition_key: str
    payload_json: str
    run_id: str | None
    request_id: str | None
    created_at: Any
    sent_at: Any

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Delivery:
        return cls(
            idempotency_key=row["idempotency_key"], asset=row["asset"], partition_key=row["partition_key"],
            payload_json=row["payload_json"], run_id=row.get("run_id"), request_id=row.get("request_id"),
            created_at=row.get("created_at"), sent_at=row.get("sent_at"),
        )


@dataclass(frozen=True)
class CellVersions(JsonRecord):
    """``versions``: a cell's interval (business time and UTC), its skip mark, and every version oldest first —
    or, for a side-effect asset, its deliveries instead (``side_effect``)."""

    asset: str
    partition_key: str
    timezone: str
    interval: tuple[str, str]  # [start, end) in the business timezone, ISO 8601 with offset
    interval_utc: tuple[str, str]
    side_effect: bool
    skip_mark: str | None  # the cell's own mark (backfill-assets skip), as its summary words it
    versions: tuple[VersionEntry, ...] = ()
    deliveries: tuple[Delivery, ...] = ()

    def entries(self) -> list[dict[str, Any]]:
        """What ``versions --json`` prints: each version's (or, for a side-effect asset, each delivery's) record."""
        shown: Sequence[VersionEntry | Delivery] = self.deliveries if self.side_effect else self.versions
        return [entry.as_dict() for entry in shown]


@dataclass(frozen=True)
class CellTries(JsonRecord):
    """``request show ID --cell``: every try of a cell across every request and production, oldest first
    (``engine/store/tries.Try``), ``request_id``'s marked ``this_request``; ``in_request``: whether the cell is
    one of that request's."""

    request_id: str
    asset: str
    partition_key: str
    in_request: bool
    tries: tuple[Try, ...]


def require_any_cell(context: ServiceContext, asset: str, partition_key: str) -> bool:
    """A known asset, data or side effect, and a business day of its partitions; whether it is a side effect."""
    spec = context.graph.require(asset, data_only=False)
    context.graph.calendar.interval(partition_key)
    return spec.side_effect


def deliveries(context: ServiceContext, asset: str, partition_key: str) -> list[Delivery]:
    """A side-effect asset's outbox deliveries for the day, oldest first."""
    require_any_cell(context, asset, partition_key)
    return [Delivery.of(row) for row in outbox_rows(context.catalog, partition_key, asset=asset)]


def cell_versions(context: ServiceContext, asset: str, partition_key: str) -> CellVersions:
    side_effect = require_any_cell(context, asset, partition_key)
    calendar = context.graph.calendar
    interval = calendar.interval(partition_key)
    view = CellVersions(
        asset, partition_key, calendar.tz_name, (interval.start.isoformat(), interval.end.isoformat()),
        (interval.start_utc.isoformat(), interval.end_utc.isoformat()), side_effect, skip_mark=None,
    )
    if side_effect:
        return replace(view, deliveries=tuple(deliveries(context, asset, partition_key)))
    catalog = context.catalog
    skip = catalog.skip_marks([(asset, partition_key)]).get((asset, partition_key))
    entries = _entries(context, asset, partition_key, catalog.versions_of(asset, partition_key))
    return replace(view, skip_mark=skip.summary if skip else None, versions=entries)


def _entries(context: ServiceContext, asset: str, partition_key: str, versions: list[Version]
             ) -> tuple[VersionEntry, ...]:
    catalog, calendar = context.catalog, context.graph.calendar
    current = catalog.current(asset, partition_key)
    # Who asked for each version and why, and a person's overrides of it: the same query as the cell's tries
    # (``request show --cell``), so the two agree. Read after the versions: every one of them is there.
    asked = {t.version_id: t for t in cell_tries(catalog, asset, partition_key) if t.version_written}
    engines = EngineRefs(catalog).of_versions([v.version_id for v in versions])
    history = catalog.history(asset, partition_key)
    entries, previous = [], None
    for version in versions:
        who = asked[version.version_id]
        entries.append(VersionEntry(
            version=version, current=current is not None and version.version_id == current.version_id,
            run_note=run_note(version, previous), requested_by=who.requested_by,
            request_reason=who.request_reason, overrides=who.overrides,
            engine_refs=tuple(engines[version.version_id]), timezone=calendar.tz_name,
            interval_start_local=in_zone(version.interval_start, calendar.tz),
            interval_end_local=in_zone(version.interval_end, calendar.tz),
            history=tuple(PointerEvent(h["seq"], h["action"], h["at"], h["previous_version_id"], h["reason"])
                          for h in history if h["version_id"] == version.version_id),
        ))
        previous = version
    return tuple(entries)


def run_note(version: Version, previous: Version | None) -> str:
    """How a version relates to the one before it in the cell: another attempt of the same computation, or a run
    whose code or params differ (a re-execution that changed them is a new run, never attempt N+1)."""
    if version.attempt_no and version.attempt_no > 1:
        return f"attempt {version.attempt_no} of the same computation"
    if previous is None:
        return "the cell's first computation"
    changed = differences(previous, version.code_version, version.params_digest)
    return "a new run, computed as the one before" if changed == "nothing" else f"a new run: {changed}"


def request_cell_tries(
    context: ServiceContext, request_id: str, asset: str, partition_key: str,
    tries_of: Callable[[], Sequence[Try]],
) -> CellTries:
    """Every try of the cell (``tries_of``: the service's ``tries``, ``request_id``'s marked) and whether the cell
    is one of that request's. The request is checked first, then the cell: an unknown request is named as such."""
    ledger = Ledger(context.catalog)
    ledger.get(request_id)
    require_any_cell(context, asset, partition_key)
    tries = tries_of()
    in_request = any(c.key == (asset, partition_key) for c in ledger.cells(request_id))
    return CellTries(request_id, asset, partition_key, in_request, tuple(tries))


def request_versions(context: ServiceContext, request_id: str) -> list[Version]:
    """Every version a request's runs wrote (any asset, any attempt), oldest first."""
    validate_request_id(request_id)
    return context.catalog.versions_of_request(request_id)


def rollback_target(context: ServiceContext, asset: str, partition_key: str) -> Version | None:
    """The version a rollback of the day would restore now, or None (nothing serves, or nothing to go back to)."""
    context.graph.require(asset)
    context.graph.calendar.interval(partition_key)
    return context.catalog.rollback_target(asset, partition_key)
