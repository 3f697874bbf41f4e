"""The operations trail: one row per operation made through the service (``schema.operations``), so that who did
what, from which surface, when and why reads the same whether it came from Python, the CLI or the Launchpad."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import sqlalchemy as sa

from backfill_assets.engine.model.identity import validate_text
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import operations
from backfill_assets.engine.store.transactions import begin, read

MAX_OUTCOME = 2000


@dataclass(frozen=True)
class Operation(JsonRecord):
    operation: str
    surface: str
    actor: str
    target: str
    request_id: str | None
    reason: str | None
    outcome: str
    at: str


class Operations:
    def __init__(self, catalog: Catalog):
        self.engine = catalog.engine
        self.reader = catalog.reader

    def record(
        self, operation: str, surface: str, actor: str, target: str, outcome: str, request_id: str | None = None,
        reason: str | None = None,
    ) -> Operation:
        row = Operation(
            operation=operation, surface=str(surface), actor=validate_text(actor or "unknown", "actor", 120)[:120],
            target=target[:255], request_id=request_id, reason=reason or None,
            outcome=outcome[:MAX_OUTCOME], at=iso(utc_now()),
        )
        with begin(self.engine) as conn:
            conn.execute(operations.insert().values(**asdict(row)))
        return row

    def of_request(self, request_id: str) -> list[Operation]:
        """The operations made on a request (its creation, pauses, resumes, cancel, confirm), oldest first."""
        return self._select(operations.c.request_id == request_id)

    def all(self, limit: int = 200) -> list[Operation]:
        """The newest ``limit`` operations, newest first."""
        query = sa.select(operations).order_by(operations.c.id.desc()).limit(limit)
        with read(self.reader, self.engine) as conn:
            return [_operation(r) for r in conn.execute(query).all()]

    def _select(self, where: Any) -> list[Operation]:
        with read(self.reader, self.engine) as conn:
            rows = conn.execute(sa.select(operations).where(where).order_by(operations.c.id)).all()
        return [_operation(r) for r in rows]


def _operation(row: sa.Row[Any]) -> Operation:
    data = dict(row._mapping)
    data.pop("id")
    return Operation(**data)
