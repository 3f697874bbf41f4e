"""The clickstream source: page views and signups with UTC timestamps, and late events arriving afterwards."""

from __future__ import annotations

import hashlib
import random
from datetime import datetime, timedelta, timezone
from functools import lru_cache

import pandas as pd
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from backfill_assets import BusinessCalendar, Interval, retry_transient, sql_engine

_TS = "%Y-%m-%dT%H:%M:%S+00:00"  # fixed width: string order is time order
PAGES = ("/", "/pricing", "/docs", "/blog", "/signup")
VISITORS = 400

_meta = sa.MetaData()
page_views = sa.Table(
    "page_views",
    _meta,
    sa.Column("view_id", sa.String(40), primary_key=True),
    sa.Column("visitor_id", sa.String(20), nullable=False),
    sa.Column("page", sa.String(40), nullable=False),
    sa.Column("viewed_at", sa.String(32), nullable=False, index=True),
)
signups = sa.Table(
    "signups",
    _meta,
    sa.Column("signup_id", sa.String(40), primary_key=True),
    sa.Column("visitor_id", sa.String(20), nullable=False),
    sa.Column("signed_up_at", sa.String(32), nullable=False, index=True),
)


def _ts(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime(_TS)


class Clickstream:
    """The source database (SQLite or PostgreSQL URL)."""

    def __init__(self, url: str):
        self.engine = sql_engine(url)
        self.reader = sql_engine(url, read_only=True)  # steps read concurrently; only seeding writes
        # Several steps may open a fresh source at once; the loser of a CREATE race retries.
        retry_transient(lambda: _meta.create_all(self.engine, checkfirst=True))

    def _between(self, table: sa.Table, column: sa.Column, interval: Interval) -> pd.DataFrame:
        query = (
            sa.select(table)
            .where(column >= _ts(interval.start), column < _ts(interval.end))
            .order_by(column, table.primary_key.columns.values()[0])
        )
        with self.reader.connect() as conn:
            rows = [tuple(r) for r in conn.execute(query)]
        frame = pd.DataFrame.from_records(rows, columns=[c.name for c in table.columns])
        for name in frame.columns:
            frame[name] = pd.to_datetime(frame[name], utc=True) if name == column.name else frame[name].astype("string")
        return frame

    def views(self, interval: Interval) -> pd.DataFrame:
        return self._between(page_views, page_views.c.viewed_at, interval)

    def signups(self, interval: Interval) -> pd.DataFrame:
        return self._between(signups, signups.c.signed_up_at, interval)

    def fingerprint(self, table_name: str, interval: Interval) -> str:
        """A digest of the interval's rows in the source: it changes when late events arrive."""
        table = _meta.tables[table_name]
        key = table.primary_key.columns.values()[0]
        column = page_views.c.viewed_at if table is page_views else signups.c.signed_up_at
        query = sa.select(sa.func.count(), sa.func.max(key), sa.func.min(key)).where(
            column >= _ts(interval.start), column < _ts(interval.end)
        )
        with self.reader.connect() as conn:
            count, high, low = conn.execute(query).one()
        return hashlib.sha256(f"{count}:{low}:{high}".encode()).hexdigest()[:16]

    def insert(self, views: list[dict], new_signups: list[dict]) -> int:
        """Insert rows, ignoring ones already there (re-seeding is a no-op)."""
        dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
        inserted = 0
        with self.engine.begin() as conn:
            for table, rows in ((page_views, views), (signups, new_signups)):
                if rows:
                    inserted += conn.execute(dialect.insert(table).on_conflict_do_nothing(), rows).rowcount or 0
        return inserted


def synthetic_day(interval: Interval, per_day: int, batch: str = "v") -> tuple[list[dict], list[dict]]:
    """Deterministic views spread over every hour of the interval (23 or 25 of them on DST days) and signups
    from a tenth of the visitors; ``batch`` distinguishes a later delivery of late events."""
    rng = random.Random(f"web/{interval.key}/{batch}")
    seconds = int(interval.duration.total_seconds())
    compact = interval.key.replace("-", "")
    views, joined = [], []
    for i in range(per_day):
        spread = (i * seconds) // per_day  # evenly over the interval, so every hour has views
        at = interval.start_utc + timedelta(seconds=spread + rng.randrange(max(seconds // per_day, 1)))
        visitor = f"u-{rng.randrange(VISITORS):04d}"
        views.append({"view_id": f"{batch}-{compact}-{i:06d}", "visitor_id": visitor, "page": rng.choice(PAGES),
                      "viewed_at": _ts(at)})
        if i % 10 == 0:
            joined.append({"signup_id": f"s{batch}-{compact}-{i:06d}", "visitor_id": visitor,
                           "signed_up_at": _ts(at + timedelta(seconds=1))})
    return views, joined


@lru_cache(maxsize=8)
def open_clickstream(url: str) -> Clickstream:
    return Clickstream(url)


def seed_days(url: str, calendar: BusinessCalendar, first: str, last: str, per_day: int, batch: str = "v") -> int:
    source = open_clickstream(url)
    inserted = 0
    for key in calendar.keys_between(first, last):
        views, joined = synthetic_day(calendar.interval(key), per_day, batch)
        inserted += source.insert(views, joined)
    return inserted
