"""Handoffs: a downstream owner decides, within a window, whether to re-run their asset after an upstream fix."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

import sqlalchemy as sa

from backfill_assets.engine.model.errors import InvalidField, InvalidInput, NotFound, quoted
from backfill_assets.engine.model.identity import validate_text
from backfill_assets.engine.model.intervals import iso
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import handoffs
from backfill_assets.engine.store.transactions import begin, read


class HandoffStatus(StrEnum):
    """A handoff's status: open until its owner decides or its window passes."""

    OPEN = "open"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    EXPIRED = "expired"


# The statuses as the plain text the catalog stores.
OPEN = HandoffStatus.OPEN.value
ACCEPTED = HandoffStatus.ACCEPTED.value
DECLINED = HandoffStatus.DECLINED.value
EXPIRED = HandoffStatus.EXPIRED.value
DEFAULT_WINDOW = timedelta(hours=24)
UNOWNED = "unowned"  # the owner field of a handoff whose asset declares no owners
_HANDOFF_ID_RE = re.compile(r"^[a-z0-9-]{1,80}\Z")


@dataclass(frozen=True)
class Handoff(JsonRecord):
    """One handoff (a ``handoffs`` row): the affected days of a downstream asset offered to its owners, and what
    they decided."""

    handoff_id: str
    request_id: str
    asset: str
    owner: str  # the asset's owners joined, or UNOWNED
    partitions: tuple[str, ...]
    status: HandoffStatus
    deadline: str  # ISO 8601, UTC
    created_at: str
    decided_at: str | None = None
    decided_by: str | None = None
    system_user: str | None = None  # who the system saw decide (the OS user, Dagster's launching user)


class Handoffs:
    def __init__(self, catalog: Catalog):
        self.engine = catalog.engine
        self.reader = catalog.reader

    def offer(
        self, request_id: str, asset: str, owner: str, partitions: list[str], now: datetime, window: timedelta
    ) -> str:
        """Open a handoff for (request, asset), or add partitions to the one already open."""
        with begin(self.engine) as conn:
            row = conn.execute(
                sa.select(handoffs).where(
                    handoffs.c.request_id == request_id, handoffs.c.asset == asset, handoffs.c.status == OPEN
                )
            ).first()
            if row is not None:
                merged = sorted(set(json.loads(row.partitions_json)) | set(partitions))
                conn.execute(
                    handoffs.update()
                    .where(handoffs.c.handoff_id == row.handoff_id)
                    .values(partitions_json=json.dumps(merged))
                )
                handoff_id: str = row.handoff_id
                return handoff_id
            handoff_id = f"ho-{secrets.token_hex(4)}"
            conn.execute(
                handoffs.insert().values(
                    handoff_id=handoff_id,
                    request_id=request_id,
                    asset=asset,
                    owner=owner,
                    partitions_json=json.dumps(sorted(set(partitions))),
                    status=OPEN,
                    deadline=iso(now + window),
                    created_at=iso(now),
                )
            )
            return handoff_id

    def decide(
        self, handoff_id: str, status: str, by: str, now: datetime, system_user: str | None = None
    ) -> Handoff:
        """``by``: the name stated; ``system_user``: who the system saw decide, stored beside it."""
        if status not in (ACCEPTED, DECLINED):
            raise InvalidInput(f"unknown handoff decision {quoted(status)}")
        validate_handoff_id(handoff_id)
        validate_text(by, "{by}", 120)
        with begin(self.engine) as conn:
            row = conn.execute(sa.select(handoffs).where(handoffs.c.handoff_id == handoff_id)).first()
            if row is None:
                raise NotFound(f"unknown handoff {quoted(handoff_id)}")
            if row.status != OPEN:
                raise InvalidInput(f"handoff {handoff_id} is already {row.status}")
            if row.deadline < (iso(now) or ""):
                conn.execute(handoffs.update().where(handoffs.c.handoff_id == handoff_id).values(status=EXPIRED))
                raise InvalidInput(f"handoff {handoff_id} expired at {row.deadline}")
            conn.execute(
                handoffs.update()
                .where(handoffs.c.handoff_id == handoff_id, handoffs.c.status == OPEN)
                .values(status=status, decided_at=iso(now), decided_by=by, system_user=system_user)
            )
        return self.get(handoff_id)

    def expire(self, now: datetime) -> list[str]:
        with begin(self.engine) as conn:
            rows = conn.execute(
                sa.select(handoffs.c.handoff_id).where(handoffs.c.status == OPEN, handoffs.c.deadline < iso(now))
            ).all()
            ids = [r.handoff_id for r in rows]
            if ids:
                conn.execute(
                    handoffs.update()
                    .where(handoffs.c.handoff_id.in_(ids), handoffs.c.status == OPEN)
                    .values(status=EXPIRED, decided_at=iso(now), decided_by="deadline")
                )
        return ids

    def get(self, handoff_id: str) -> Handoff:
        with read(self.reader, self.engine) as conn:
            row = conn.execute(sa.select(handoffs).where(handoffs.c.handoff_id == handoff_id)).first()
        if row is None:
            raise NotFound(f"unknown handoff {quoted(handoff_id)}")
        return _record(row)

    def list(self, request_id: str | None = None, status: str | None = None) -> list[Handoff]:
        query = sa.select(handoffs).order_by(handoffs.c.created_at)
        if request_id:
            query = query.where(handoffs.c.request_id == request_id)
        if status:
            query = query.where(handoffs.c.status == status)
        with read(self.reader, self.engine) as conn:
            return [_record(r) for r in conn.execute(query).all()]


def validate_handoff_id(handoff_id: object) -> str:
    """A handoff id, or an error naming the field (``handoff_id``) as each door words it."""
    if not isinstance(handoff_id, str) or not _HANDOFF_ID_RE.fullmatch(handoff_id):
        raise InvalidField("{handoff_id} {value!r} is not of the form ho-xxxxxxxx", value=handoff_id)
    return handoff_id


def owners_of(owner_field: str) -> tuple[str, ...]:
    """The owners a handoff was offered to (its ``owner`` field: the asset's owners joined, or ``unowned``)."""
    return tuple(o.strip() for o in owner_field.split(",") if o.strip() and o.strip() != UNOWNED)


def _record(row: sa.Row[Any]) -> Handoff:
    data = dict(row._mapping)
    partitions = tuple(json.loads(data.pop("partitions_json")))
    return Handoff(**{**data, "partitions": partitions, "status": HandoffStatus(data["status"])})
