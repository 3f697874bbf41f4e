"""The demo source system: an orders database with UTC timestamps, so the business-day cut matters."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from backfill_assets import BusinessCalendar, Interval, InvalidInput, retry_transient, sql_engine

_TS_FORMAT = "%Y-%m-%dT%H:%M:%S+00:00"  # fixed width, so string order is time order in SQL

REGIONS = ("north", "south", "east", "west", "central")
CURRENCIES = ("CNY", "CNY", "CNY", "USD", "EUR")
CUSTOMERS = 2000
DUPLICATE_SHARE = 0.03  # the source re-emits some orders with a later updated_at (order amendments)

_meta = sa.MetaData()
orders = sa.Table(
    "orders",
    _meta,
    sa.Column("order_id", sa.String(40), primary_key=True),
    sa.Column("updated_at", sa.String(32), primary_key=True),
    sa.Column("customer_id", sa.String(20), nullable=False),
    sa.Column("region", sa.String(16), nullable=False),
    sa.Column("amount", sa.Float, nullable=False),
    sa.Column("currency", sa.String(3), nullable=False),
    sa.Column("created_at", sa.String(32), nullable=False, index=True),
)


def _ts(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime(_TS_FORMAT)


@dataclass(frozen=True)
class SourceSummary:
    rows: int
    amount_sum: float

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.rows}:{self.amount_sum:.4f}".encode()).hexdigest()[:16]


class SourceSystem:
    def __init__(self, url: str):
        self.engine = sql_engine(url)
        self.reader = sql_engine(url, read_only=True)  # steps read concurrently; only seeding writes
        retry_transient(lambda: _meta.create_all(self.engine, checkfirst=True))

    def seed(self, calendar: BusinessCalendar, first: str, last: str, orders_per_day: int) -> int:
        """Insert deterministic orders for every business day in ``[first, last]``; re-seeding is a no-op."""
        if not isinstance(orders_per_day, int) or not 1 <= orders_per_day <= 1_000_000:
            raise InvalidInput(f"--orders-per-day {orders_per_day!r} must be between 1 and 1000000")
        inserted = 0
        for key in calendar.keys_between(first, last):
            rows = list(_synthetic_orders(calendar.interval(key), orders_per_day))
            with self.engine.begin() as conn:
                dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
                stmt = dialect.insert(orders).on_conflict_do_nothing()
                inserted += conn.execute(stmt, rows).rowcount or 0
        return inserted

    def extract(self, interval: Interval) -> pd.DataFrame:
        query = (
            sa.select(orders)
            .where(orders.c.created_at >= _ts(interval.start), orders.c.created_at < _ts(interval.end))
            .order_by(orders.c.created_at, orders.c.order_id, orders.c.updated_at)
        )
        with self.reader.connect() as conn:
            # Plain tuples: pandas builds columns from them ~8x faster than from SQLAlchemy Rows or dicts.
            rows = [tuple(row) for row in conn.execute(query)]
        frame = pd.DataFrame.from_records(rows, columns=[c.name for c in orders.columns])
        frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True)
        frame["updated_at"] = pd.to_datetime(frame["updated_at"], utc=True)
        frame["amount"] = frame["amount"].astype("float64")
        return frame[["order_id", "customer_id", "region", "amount", "currency", "created_at", "updated_at"]]

    def summary(self, interval: Interval) -> SourceSummary:
        query = sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(orders.c.amount), 0.0)).where(
            orders.c.created_at >= _ts(interval.start), orders.c.created_at < _ts(interval.end)
        )
        with self.reader.connect() as conn:
            count, total = conn.execute(query).one()
        return SourceSummary(rows=int(count), amount_sum=float(total))


def _synthetic_orders(interval: Interval, n: int):
    rng = random.Random(f"orders/{interval.key}")
    seconds = int(interval.duration.total_seconds())
    start = interval.start_utc
    compact = interval.key.replace("-", "")
    for i in range(n):
        created = start + timedelta(seconds=rng.randrange(seconds))
        base: dict[str, Any] = {
            "order_id": f"o-{compact}-{i:06d}",
            "customer_id": f"c-{rng.randrange(CUSTOMERS):05d}",
            "region": rng.choice(REGIONS),
            "amount": round(rng.uniform(5, 500), 2),
            "currency": rng.choice(CURRENCIES),
            "created_at": _ts(created),
        }
        yield {**base, "updated_at": _ts(created)}
        if rng.random() < DUPLICATE_SHARE:
            amended = created + timedelta(minutes=rng.randrange(1, 120))
            yield {**base, "amount": round(base["amount"] * 0.9, 2), "updated_at": _ts(amended)}


def seed(first: str, last: str, per_day: int) -> int:
    """``backfill-assets seed``: deterministic synthetic orders for every business day in ``[first, last]``."""
    from backfill_assets import Settings

    from .domain import DEMO_CALENDAR

    return SourceSystem(Settings.from_env().source_url).seed(DEMO_CALENDAR, first, last, per_day)
