"""Side effects through an outbox: one delivery per idempotency key, however often the step runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import sqlalchemy as sa

from backfill_assets.engine.model.identity import params_digest
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import outbox
from backfill_assets.engine.store.transactions import begin, read


@dataclass(frozen=True)
class Delivery:
    idempotency_key: str
    sent_now: bool
    sent_at: str | None


def idempotency_key(asset: str, partition_key: str, payload: dict[str, Any]) -> str:
    """Keyed by what the message says, not by the run or version that produced it: recomputing identical
    numbers sends nothing again, while a corrected figure is a new message."""
    content = {k: v for k, v in payload.items() if k != "source_version_id"}
    return f"{asset}/{partition_key}/{params_digest(content)}"


def send_once(
    catalog: Catalog,
    deliver: Callable[[dict[str, Any]], None],
    key: str,
    *,
    asset: str,
    partition_key: str,
    payload: dict[str, Any],
    dagster_run_id: str,
    request_id: str | None,
) -> Delivery:
    now = iso(utc_now())
    with begin(catalog.engine) as conn:
        row = conn.execute(sa.select(outbox).where(outbox.c.idempotency_key == key)).first()
        if row is None:
            conn.execute(
                outbox.insert().values(
                    idempotency_key=key,
                    asset=asset,
                    partition_key=partition_key,
                    payload_json=json.dumps(payload, sort_keys=True),
                    run_id=dagster_run_id,
                    request_id=request_id,
                    created_at=now,
                )
            )
        elif row.sent_at is not None:
            return Delivery(key, False, row.sent_at)
    # Delivery is at-least-once only across a crash between the delivery and the mark below; the receiver
    # gets the key with every message so it can drop such a repeat itself.
    deliver({"idempotency_key": key, **payload})
    with begin(catalog.engine) as conn:
        conn.execute(
            outbox.update().where(outbox.c.idempotency_key == key, outbox.c.sent_at.is_(None)).values(sent_at=now)
        )
    return Delivery(key, True, now)


def deliveries(
    catalog: Catalog, partition_key: str | None = None, asset: str | None = None, request_id: str | None = None
) -> list[dict[str, Any]]:
    """Outbox rows (a side-effect asset's whole state), oldest first, optionally of one partition/asset/request."""
    query = sa.select(outbox).order_by(outbox.c.created_at)
    if partition_key:
        query = query.where(outbox.c.partition_key == partition_key)
    if asset:
        query = query.where(outbox.c.asset == asset)
    if request_id:
        query = query.where(outbox.c.request_id == request_id)
    with read(catalog.reader, catalog.engine) as conn:
        return [dict(r._mapping) for r in conn.execute(query).all()]
