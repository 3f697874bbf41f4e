"""The request ledger: requests, their cells (request_items) and partition claims, in the catalog database."""

from __future__ import annotations

import builtins
import json
from typing import Any, Iterable

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell, CellOrigin, CellUpdate, SkipKind
from backfill_assets.engine.model.errors import InvalidField, InvalidInput, NotFound, PlanError, quoted
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.claims import claim, claimable_cells, claimed_by, overlap_message, release
from backfill_assets.engine.store.request_record import (
    RequestRecord as RequestRecord,  # re-exported: service, integration
)
from backfill_assets.engine.store.schema import request_items, requests
from backfill_assets.engine.store.tick_tokens import (
    LedgerState,
    StaleTick,
    TickSnapshot,
    advance_token,
    count_decisions,
    read_ledger_state,
    read_token,
)
from backfill_assets.engine.store.tick_writes import write_cell, write_tick_cells
from backfill_assets.engine.store.transactions import begin, read

_REQUEST_ID_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-")


def validate_request_id(request_id: object) -> str:
    """A request id, or an error naming the field (``request_id``) as each door words it."""
    if not isinstance(request_id, str) or not 1 <= len(request_id) <= 80 or not set(request_id) <= _REQUEST_ID_CHARS:
        raise InvalidField("{request_id} {value!r} is not of the form req-YYYYMMDD-xxxxxxxx or dg-<id>",
                           value=request_id)
    return request_id


class Ledger:
    # The method ``list`` shadows the builtin in this class's annotations: they say ``builtins.list``.

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.engine = catalog.engine
        self.reader = catalog.reader

    # ---- create -----------------------------------------------------------------------------------------------

    def create(
        self,
        request_id: str,
        spec: M.RequestSpec,
        code_version: str,
        excluded: dict[tuple[str, str], str],
        source: str = M.RequestSource.CLI,
        status: str | None = None,
        message: str | None = None,
    ) -> RequestRecord:
        """Store the frozen request, its cells in submission order, and claim its partitions; ``message`` is
        shown with its status (an overlap's message takes its place).

        ``excluded`` maps cells decided at creation (unauthorized side effects) to their skip reason; they are
        recorded as deliberately skipped and not claimed.
        """
        validate_request_id(request_id)
        try:
            return self._create(request_id, spec, code_version, excluded, source, status, message)
        except sa.exc.IntegrityError:
            # Two creators raced for the same partitions: the claims' primary key let exactly one win.
            # Run again: the loser now sees the winner's claims and is refused (or waits) with a clear message.
            return self._create(request_id, spec, code_version, excluded, source, status, message)

    def _create(
        self,
        request_id: str,
        spec: M.RequestSpec,
        code_version: str,
        excluded: dict[tuple[str, str], str],
        source: str,
        status: str | None,
        message: str | None,
    ) -> RequestRecord:
        now = iso(utc_now())
        cells = [(a, p) for p in spec.ordered_partitions() for a in spec.assets]
        claimable = [c for c in cells if c not in excluded]
        with begin(self.engine) as conn:
            holders = claimed_by(conn, claimable)
            driven = source in M.DRIVEN_SOURCES
            if holders and not spec.wait_for_overlap and driven:
                raise PlanError(overlap_message(holders))
            initial = status or (M.WAITING if holders and driven else M.OPEN)
            conn.execute(
                requests.insert().values(
                    request_id=request_id,
                    status=initial,
                    assets_json=json.dumps(list(spec.assets)),
                    partitions_json=json.dumps(list(spec.partitions)),
                    code_version=code_version,
                    reprocess=spec.reprocess,
                    downstream=spec.downstream,
                    confirm_cascade=spec.confirm_cascade,
                    order=spec.order,
                    max_active=spec.max_active,
                    serial=spec.serial,
                    wait_for_overlap=spec.wait_for_overlap,
                    partitions_per_run=spec.partitions_per_run,
                    partitions_per_run_mode=spec.partitions_per_run_text,
                    only_failed=spec.only_failed,
                    conf_json=json.dumps(spec.conf, sort_keys=True),
                    side_effects_json=json.dumps(list(spec.allow_side_effects)),
                    approved_by=spec.approved_by,
                    requested_by=spec.requested_by,
                    system_user=spec.system_user,
                    reason=spec.reason,
                    requested_at=now,
                    source=source,
                    message=overlap_message(holders) if holders else message,
                )
            )
            conn.execute(
                request_items.insert(),
                _item_rows(
                    request_id, cells, first_ordinal=0, origin=CellOrigin.PLANNED, now=now,
                    decided={cell: (M.SKIPPED, reason) for cell, reason in excluded.items()},
                ),
            )
            if not holders:
                claim(conn, request_id, claimable, now)
            elif not driven:
                # An adopted backfill already runs: claim what is free, report the rest.
                free = [c for c in claimable if c not in holders]
                claim(conn, request_id, free, now)
        return self.get(request_id)

    def try_claim(self, request_id: str) -> bool:
        """For a waiting request: take every claim once the holders have closed (all or nothing)."""
        now = iso(utc_now())
        with begin(self.engine) as conn:
            # The request row first, and only while still waiting: a pause or cancel that committed since the
            # driver read it must not find claims taken by a request it stopped.
            if not self._lock_if_status(conn, request_id, M.WAITING):
                return False
            cells = claimable_cells(conn, request_id)
            holders = claimed_by(conn, cells)
            if holders:
                conn.execute(
                    requests.update()
                    .where(requests.c.request_id == request_id)
                    .values(message=overlap_message(holders))
                )
                return False
            claim(conn, request_id, cells, now)
            conn.execute(
                requests.update()
                .where(requests.c.request_id == request_id, requests.c.status == M.WAITING)
                .values(status=M.OPEN, message=None)
            )
            return True

    # ---- read -------------------------------------------------------------------------------------------------

    def get(self, request_id: str) -> RequestRecord:
        validate_request_id(request_id)
        with read(self.reader, self.engine) as conn:
            row = conn.execute(sa.select(requests).where(requests.c.request_id == request_id)).first()
        if row is None:
            raise NotFound(f"unknown request {quoted(request_id)}")
        return RequestRecord(dict(row._mapping))

    def status_of(self, request_id: str) -> str | None:
        """The request's status alone (None: no such request), in one read of one column: what a step asks before
        every publish."""
        with read(self.reader, self.engine) as conn:
            status: str | None = conn.execute(
                sa.select(requests.c.status).where(requests.c.request_id == request_id)
            ).scalar()
        return status

    def exists(self, request_id: str) -> bool:
        with read(self.reader, self.engine) as conn:
            return conn.execute(
                sa.select(requests.c.request_id).where(requests.c.request_id == request_id)
            ).first() is not None

    def list(self, statuses: Iterable[str] | None = None) -> list[RequestRecord]:
        query = sa.select(requests).order_by(requests.c.requested_at.desc())
        if statuses:
            query = query.where(requests.c.status.in_(list(statuses)))
        with read(self.reader, self.engine) as conn:
            return [RequestRecord(dict(r._mapping)) for r in conn.execute(query).all()]

    def cells(self, request_id: str) -> builtins.list[Cell]:
        with read(self.reader, self.engine) as conn:
            rows = conn.execute(
                sa.select(request_items)
                .where(request_items.c.request_id == request_id)
                .order_by(request_items.c.ordinal)
            ).all()
        names = rows[0]._fields if rows else ()  # read once: a row's ``_asdict`` asks its result for them again
        return [Cell.from_row(dict(zip(names, r, strict=True))) for r in rows]

    def counts(self, request_id: str) -> dict[str, int]:
        counts: dict[str, int] = {d: 0 for d in (M.PENDING, *M.IN_PROGRESS_CELLS, *M.TERMINAL_CELLS)}
        with self.reader.connect() as conn:
            counts.update(count_decisions(conn, request_id))
        counts["planned"] = sum(counts.values())
        return counts

    def snapshot(self, request_id: str) -> TickSnapshot:
        """A driver tick's view of a request: the token first, so anything recorded after it is seen as a change."""
        with self.reader.connect() as conn:
            token = read_token(conn, request_id)
        return TickSnapshot(token, self.get(request_id), self.cells(request_id))

    def state(self, request_id: str) -> LedgerState | None:
        """The request's ``LedgerState`` (token, row, cells counted by decision): what an idle tick compares with
        the state its last tick left, without reading a cell."""
        with self.reader.connect() as conn:
            return read_ledger_state(conn, request_id)

    # ---- write ------------------------------------------------------------------------------------------------

    def record_tick(self, snapshot: TickSnapshot, updates: builtins.list[CellUpdate]) -> bool:
        """Record a driver tick's decisions, all or nothing, only if nothing it read changed: the request still has
        the status it read (a cancel or pause that committed meanwhile wins), no other tick recorded since it read
        the token (compare-and-set of the token), and each cell it changes still has the decision and run key it
        read. Of two drivers ticking one request at once, the second records nothing, so it submits nothing: the
        caller yields run requests only when this returns True."""
        request_id, now = snapshot.record.request_id, iso(utc_now())
        seen = {c.key: c for c in snapshot.cells}
        try:
            with self.engine.begin() as conn:
                if not self._lock_if_status(conn, request_id, snapshot.record.status):
                    return False
                if not advance_token(conn, request_id, snapshot.token, now):
                    return False
                write_tick_cells(conn, request_id, updates, seen, now)
        except (StaleTick, sa.exc.IntegrityError):  # IntegrityError: another tick inserted the first token
            return False
        return True

    def update_cells(
        self, request_id: str, updates: builtins.list[CellUpdate], expect_status: str | None = None
    ) -> bool:
        """Write cell updates. With ``expect_status``, only while the request still has that status (checked and
        locked in the same transaction, so a concurrent cancel is never overwritten); returns whether written."""
        if not updates and expect_status is None:
            return True
        now = iso(utc_now())
        with begin(self.engine) as conn:
            if expect_status is not None and not self._lock_if_status(conn, request_id, expect_status):
                return False
            for u in updates:
                write_cell(conn, request_id, u, now)
        return True

    def add_cells(
        self, request_id: str, cells: builtins.list[tuple[str, str]], origin: str, reopen: bool = False
    ) -> int:
        """Append cells (cascade, handoff) the request does not have yet; with ``reopen``, a finished cell is
        set pending again because its upstream was republished after it ran. Returns cells added or reopened."""
        now = iso(utc_now())
        changed = 0
        with begin(self.engine) as conn:
            existing = {
                (r.asset, r.partition_key): r.decision
                for r in conn.execute(
                    sa.select(request_items.c.asset, request_items.c.partition_key, request_items.c.decision).where(
                        request_items.c.request_id == request_id
                    )
                )
            }
            start = conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(request_items.c.ordinal), -1)).where(
                    request_items.c.request_id == request_id
                )
            ).scalar_one()
            new = [c for c in dict.fromkeys(cells) if c not in existing]
            if new:
                conn.execute(
                    request_items.insert(),
                    _item_rows(request_id, new, first_ordinal=start + 1, origin=origin, now=now),
                )
                changed += len(new)
            if reopen:
                for asset, partition in dict.fromkeys(cells):
                    if existing.get((asset, partition)) in (M.PUBLISHED, M.REJECTED, M.FAILED):
                        conn.execute(
                            request_items.update()
                            .where(
                                request_items.c.request_id == request_id,
                                request_items.c.asset == asset,
                                request_items.c.partition_key == partition,
                            )
                            .values(decision=M.PENDING, reason="reopened: upstream republished", skip_kind=None,
                                    updated_at=now)
                        )
                        changed += 1
        return changed

    def set_status(
        self, request_id: str, status: str, message: str | None = None, expect_status: str | None = None
    ) -> bool:
        """Set the status; with ``expect_status``, only if the request still has that status."""
        values: dict[str, Any] = {"status": status, "message": message}
        if status in M.CLOSED_STATUSES:
            values["closed_at"] = iso(utc_now())
        with begin(self.engine) as conn:
            query = requests.update().where(requests.c.request_id == request_id)
            if expect_status is not None:
                query = query.where(requests.c.status == expect_status)
            if conn.execute(query.values(**values)).rowcount == 0 and expect_status is not None:
                return False
            if status in M.CLOSED_STATUSES:
                release(conn, request_id)
        return True

    def confirm(self, request_id: str) -> None:
        with begin(self.engine) as conn:
            conn.execute(
                requests.update().where(requests.c.request_id == request_id).values(confirmed_at=iso(utc_now()))
            )

    def cancel(self, request_id: str) -> builtins.list[Cell]:
        """Close the request: pending and following cells become cancelled (a followed run is another requester's:
        it goes on); returns the submitted cells (their runs to stop)."""
        record = self.get(request_id)
        if record.status in M.CLOSED_STATUSES:
            raise InvalidInput(f"request {request_id} is already {record.status}")
        now = iso(utc_now())
        with begin(self.engine) as conn:
            # The request row first (the driver locks it first too): closes it exactly once.
            closed = conn.execute(
                requests.update()
                .where(requests.c.request_id == request_id, requests.c.status.not_in(M.CLOSED_STATUSES))
                .values(status=M.CANCELLED, closed_at=now, message="cancelled by user")
            ).rowcount
            if not closed:
                raise InvalidInput(f"request {request_id} is already {self.get(request_id).status}")
            conn.execute(
                request_items.update()
                .where(request_items.c.request_id == request_id,
                       request_items.c.decision.in_((M.PENDING, M.FOLLOWING)))
                .values(decision=M.CELL_CANCELLED, reason="request cancelled", updated_at=now)
            )
            release(conn, request_id)
        return [c for c in self.cells(request_id) if c.decision == M.SUBMITTED]

    # ---- internals --------------------------------------------------------------------------------------------

    @staticmethod
    def _lock_if_status(conn: sa.Connection, request_id: str, status: str) -> bool:
        """Take the request row's write lock if it still has ``status`` (a no-op update, portable to SQLite)."""
        return bool(
            conn.execute(
                requests.update()
                .where(requests.c.request_id == request_id, requests.c.status == status)
                .values(status=status)
            ).rowcount
        )


def _item_rows(
    request_id: str,
    cells: list[tuple[str, str]],
    *,
    first_ordinal: int,
    origin: str,
    now: str | None,
    decided: dict[tuple[str, str], tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """request_items rows for ``cells`` in order; cells in ``decided`` start with that (decision, reason)."""
    decided = decided or {}
    return [
        dict(
            request_id=request_id,
            asset=asset,
            partition_key=partition,
            ordinal=first_ordinal + i,
            origin=origin,
            decision=decided.get((asset, partition), (M.PENDING, None))[0],
            reason=decided.get((asset, partition), (M.PENDING, None))[1],
            # A cell decided at creation is an unauthorized side effect: the request's own decision.
            skip_kind=SkipKind.DECIDED.value if (asset, partition) in decided else None,
            updated_at=now,
        )
        for i, (asset, partition) in enumerate(cells)
    ]
