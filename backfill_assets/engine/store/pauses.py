"""Pausing a request (Airflow's pause of a backfill): the request's status, and one ``request_pauses`` row per pause
saying who paused it, when, why, and the status its resume restores.

A paused request submits nothing new, but the driver still settles the runs it had already launched; it keeps its
partition claims (an overlapping request is still refused, or waits) and never closes while paused, however many
of its cells are done. Pausing a paused request changes nothing and says so (like a second ``request cancel``);
resuming one that is not paused is an error. Only requests this project drives can be paused: an adopted Dagster
backfill is launched by Dagster's own daemon.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidField, InvalidInput, NotFound, PlanError, quoted
from backfill_assets.engine.model.identity import validate_text
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import validate_request_id
from backfill_assets.engine.store.schema import request_pauses, requests
from backfill_assets.engine.store.transactions import begin, read

MAX_REASON = 2000
MAX_NAME = 120
# A pause is a compare-and-set of the status it read; another writer changing the status in between (the driver
# closing or blocking it) makes it read again, a few times at most.
_ATTEMPTS = 3


@dataclass(frozen=True)
class Pause(JsonRecord):
    """One pause of a request: who paused it, when (ISO 8601, UTC) and why; the status and message its resume
    restores; who resumed it and when (``None`` while it lasts, and on a request cancelled while paused)."""

    request_id: str
    paused_at: str | None
    paused_by: str
    reason: str
    status_before: str
    message_before: str | None
    resumed_at: str | None = None
    resumed_by: str | None = None

    @property
    def message(self) -> str:
        """The request's message while paused (shown by ``request show``, ``request wait``, reconcile, the UI)."""
        why = f": {self.reason}" if self.reason else ""
        return f"paused by {self.paused_by} at {self.paused_at}{why}"


def status_text(status: str, pause: Pause | None) -> str:
    """A request's status for a human: while paused, who paused it, when and why."""
    return pause.message if status == M.PAUSED and pause else status


class Pauses:
    def __init__(self, catalog: Catalog):
        self.engine = catalog.engine
        self.reader = catalog.reader

    def pause(self, request_id: str, by: str, reason: str = "") -> tuple[Pause, bool]:
        """Pause the request; returns its pause and whether it was already paused (then nothing is written and
        the first pause's who, when and why stand). Refuses, writing nothing, a closed or adopted request."""
        validate_request_id(request_id)
        by = _name(by, "{by}")
        reason = validate_text((reason or "").strip(), "{reason}", MAX_REASON, line_breaks=True)
        for _ in range(_ATTEMPTS):
            with begin(self.engine) as conn:
                row = _request_row(conn, request_id)
                if row.source not in M.DRIVEN_SOURCES:
                    raise InvalidInput(
                        f"request {request_id} is a Dagster backfill (source {row.source}): Dagster's backfill "
                        "daemon launches its runs, so it cannot be paused; cancel it instead (request cancel) or "
                        "use Dagster's UI"
                    )
                if row.status == M.PAUSED:
                    return _open_pause(conn, request_id)[1], True
                if row.status not in M.PAUSABLE_STATUSES:
                    raise InvalidInput(
                        f"request {request_id} is {row.status}; only a waiting, open or blocked request can be paused"
                    )
                pause = Pause(request_id=request_id, paused_at=iso(utc_now()), paused_by=by, reason=reason,
                              status_before=row.status, message_before=row.message)
                changed = conn.execute(
                    requests.update()
                    .where(requests.c.request_id == request_id, requests.c.status == row.status)
                    .values(status=M.PAUSED, message=pause.message)
                ).rowcount
                if changed:
                    conn.execute(request_pauses.insert().values(**pause.as_dict()))
                    return pause, False
        raise PlanError(f"request {request_id} kept changing status while being paused; try again")

    def resume(self, request_id: str, by: str) -> Pause:
        """Resume a paused request: it gets back the status (and message) it had when paused, and the driver goes
        on where it stopped. Returns the pause, now with ``resumed_at`` and ``resumed_by``."""
        validate_request_id(request_id)
        by = _name(by, "{by}")
        with begin(self.engine) as conn:
            row = _request_row(conn, request_id)
            if row.status != M.PAUSED:
                raise InvalidInput(f"request {request_id} is not paused (it is {row.status})")
            pause_id, pause = _open_pause(conn, request_id)
            restored = pause.status_before if pause.status_before in M.PAUSABLE_STATUSES else M.OPEN
            changed = conn.execute(
                requests.update()
                .where(requests.c.request_id == request_id, requests.c.status == M.PAUSED)
                .values(status=restored, message=pause.message_before)
            ).rowcount
            if not changed:  # cancelled since it was read (a writer on PostgreSQL): nothing to resume
                raise InvalidInput(f"request {request_id} is not paused any more")
            pause = replace(pause, resumed_at=iso(utc_now()), resumed_by=by)
            conn.execute(
                request_pauses.update()
                .where(request_pauses.c.id == pause_id)
                .values(resumed_at=pause.resumed_at, resumed_by=by)
            )
        return pause

    def current(self, request_ids: Iterable[str] | None = None) -> dict[str, Pause]:
        """request id → its pause, for the requests that are paused now (all of them, or among ``request_ids``)."""
        query = (
            sa.select(request_pauses)
            .join(requests, requests.c.request_id == request_pauses.c.request_id)
            .where(requests.c.status == M.PAUSED, request_pauses.c.resumed_at.is_(None))
        )
        if request_ids is not None:
            query = query.where(request_pauses.c.request_id.in_(list(request_ids)))
        with read(self.reader, self.engine) as conn:
            return {r.request_id: _public(r) for r in conn.execute(query).all()}

    def history(self, request_id: str) -> list[Pause]:
        """Every pause of the request, oldest first; one without ``resumed_at`` on a closed request was ended by
        its cancel."""
        with read(self.reader, self.engine) as conn:
            rows = conn.execute(
                sa.select(request_pauses)
                .where(request_pauses.c.request_id == request_id)
                .order_by(request_pauses.c.id)
            ).all()
        return [_public(r) for r in rows]


def _name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidField(what + " must name someone")
    return validate_text(value.strip(), what, MAX_NAME)


def _request_row(conn: sa.Connection, request_id: str) -> Any:
    row = conn.execute(
        sa.select(requests.c.status, requests.c.source, requests.c.message).where(
            requests.c.request_id == request_id
        )
    ).first()
    if row is None:
        raise NotFound(f"unknown request {quoted(request_id)}")
    return row


def _open_pause(conn: sa.Connection, request_id: str) -> tuple[int | None, Pause]:
    """The request's pause that has not ended, and its row id."""
    row = conn.execute(
        sa.select(request_pauses)
        .where(request_pauses.c.request_id == request_id, request_pauses.c.resumed_at.is_(None))
        .order_by(request_pauses.c.id.desc())
        .limit(1)
    ).first()
    if row is None:
        # Paused with no record of it (set by hand in the database): resume to open, say nobody paused it.
        return None, Pause(request_id=request_id, paused_at=None, paused_by="unknown", reason="",
                           status_before=M.OPEN, message_before=None)
    return row.id, _public(row)


def _public(row: Any) -> Pause:
    values = dict(row._mapping)
    values.pop("id", None)
    return Pause(**values)
