"""The PostgreSQL published table: each gated asset's published days as ``published.<asset>``, partitioned by day,
each day the attached table of the version its pointer names. Read here the way its users read it: plain SQL
through psycopg2. A real PostgreSQL server; this module's own database, dropped after it."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pandas as pd
import pytest

from backfill_assets.engine.store import pg_tables
from backfill_assets.engine.store.pg_types import PgTableError
from backfill_assets.engine.tables.published_tables import PublishedTables
from tests.tables.pg_table_helpers import (
    D1,
    D2,
    D3,
    DAYS,
    days_of,
    pointers_of,
    published,
    rejected,
    sql,
    version_tables,
)

pytestmark = pytest.mark.postgres


# ---- a catalog elsewhere: the table follows by syncing ------------------------------------------------------------


def test_sync_publishes_each_day_and_switches_a_republished_one(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_sync"
    first = {day: published(sqlite_catalog, warehouse, asset, day, f"run-a{i}", rows=3 + i)
             for i, day in enumerate(DAYS)}
    assert [d for d in tables.lag(sqlite_catalog, asset).days_behind] == DAYS

    result = tables.sync(sqlite_catalog, asset)

    assert result.days == tuple(DAYS) and result.versions == tuple(v.version_id for v in first.values())
    assert days_of(pg_url, asset) == {D1: (3, "run-a0"), D2: (4, "run-a1"), D3: (5, "run-a2")}
    assert tables.lag(sqlite_catalog, asset).in_line
    assert tables.sync(sqlite_catalog, asset).days == ()  # nothing moved: nothing switched

    published(sqlite_catalog, warehouse, asset, D2, "run-b", rows=7)
    assert tables.lag(sqlite_catalog, asset).days_behind == (D2,)
    assert days_of(pg_url, asset)[D2] == (4, "run-a1")  # the table lags the pointer until a sync, never leads it

    again = tables.sync(sqlite_catalog, asset)

    assert again.days == (D2,) and again.before_seq == result.seq and again.seq > result.seq
    assert days_of(pg_url, asset) == {D1: (3, "run-a0"), D2: (7, "run-b"), D3: (5, "run-a2")}
    assert tables.serving(asset) == pointers_of(sqlite_catalog, asset, DAYS)


def test_a_rejected_version_never_appears(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_reject"
    published(sqlite_catalog, warehouse, asset, D1, "run-a")
    tables.sync(sqlite_catalog, asset)
    bad = rejected(sqlite_catalog, warehouse, asset, D1, "run-bad", rows=9)

    assert tables.sync(sqlite_catalog, asset).days == ()
    assert days_of(pg_url, asset) == {D1: (3, "run-a")}
    assert pg_tables.version_table_name(bad) not in version_tables(pg_url, asset)  # never even loaded


def test_a_rollback_brings_the_previous_version_back(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_rollback"
    for day in DAYS:
        published(sqlite_catalog, warehouse, asset, day, "run-a")
    tables.sync(sqlite_catalog, asset)
    published(sqlite_catalog, warehouse, asset, D3, "run-b", rows=6)
    tables.sync(sqlite_catalog, asset)
    assert days_of(pg_url, asset)[D3] == (6, "run-b")
    loaded = version_tables(pg_url, asset)

    sqlite_catalog.rollback(asset, D3, "bad numbers")
    assert tables.sync(sqlite_catalog, asset).days == (D3,)

    assert days_of(pg_url, asset) == {D1: (3, "run-a"), D2: (3, "run-a"), D3: (3, "run-a")}
    assert version_tables(pg_url, asset) == loaded  # the detached table was attached again, not loaded again


def test_expire_drops_detached_tables_and_a_rollback_loads_them_again(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_expire"
    old = published(sqlite_catalog, warehouse, asset, D1, "run-a")
    tables.sync(sqlite_catalog, asset)
    new = published(sqlite_catalog, warehouse, asset, D1, "run-b", rows=4)
    tables.sync(sqlite_catalog, asset)
    assert tables.expire(asset, datetime.now(timezone.utc) - timedelta(hours=1)) == 0  # detached just now

    assert tables.expire(asset, datetime.now(timezone.utc) + timedelta(seconds=1)) == 1

    assert version_tables(pg_url, asset) == {pg_tables.version_table_name(new)}  # the serving one stays
    assert days_of(pg_url, asset) == {D1: (4, "run-b")}
    sqlite_catalog.rollback(asset, D1, "back")
    tables.sync(sqlite_catalog, asset)
    assert days_of(pg_url, asset) == {D1: (3, "run-a")}
    assert pg_tables.version_table_name(old) in version_tables(pg_url, asset)
    assert tables.referenced_files(asset) == set()


def test_names_of_the_longest_asset_fit_postgresql(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_" + "x" * 61  # 63 characters, the longest asset name
    version = published(sqlite_catalog, warehouse, asset, D1, "run-a")
    tables.sync(sqlite_catalog, asset)
    assert len(pg_tables.version_table_name(version)) == 63
    assert days_of(pg_url, asset) == {D1: (3, "run-a")}
    assert version_tables(pg_url, asset[:47]) == {pg_tables.version_table_name(version)}


def test_published_tables_sync_every_kind_and_report(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_report"
    published(sqlite_catalog, warehouse, asset, D1, "run-a")
    report = PublishedTables(tables.settings, [tables]).sync(sqlite_catalog, [asset])
    assert report.ok and [r.days for r in report.synced] == [(D1,)]
    assert [lag.in_line for lag in PublishedTables(tables.settings, [tables]).lag(sqlite_catalog, [asset])] == [True]


def test_columns_map_to_postgresql_types(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_types"
    frame = pd.DataFrame({
        "i32": pd.Series([1, 2], dtype="int32"),
        "i64": pd.Series([2**40, None], dtype="Int64"),
        "f": [0.5, float("nan")],
        "s": ["a,\"b\"\nc", None],
        "b": [True, False],
        "ts": pd.to_datetime(["2022-10-01 10:00:00.123456", "2022-10-01 11:00:00.000000"]),
        "tz": pd.to_datetime(["2022-10-01 10:00", "2022-10-01 11:00"]).tz_localize("Asia/Shanghai"),
        "day": [datetime(2022, 9, 30).date(), None],
        "dec": [Decimal("1.25"), Decimal("-3.50")],
        "cat": pd.Categorical(["x", "y"]),
        "marker": ["run-a", "run-a"],
    })
    published(sqlite_catalog, warehouse, asset, D1, "run-a", frame=frame)
    tables.sync(sqlite_catalog, asset)

    types = dict(sql(pg_url, "SELECT column_name, data_type FROM information_schema.columns "
                              "WHERE table_schema = 'published' AND table_name = %s", asset))
    assert types == {
        "i32": "integer", "i64": "bigint", "f": "double precision", "s": "text", "b": "boolean",
        "ts": "timestamp without time zone", "tz": "timestamp with time zone", "day": "date", "dec": "numeric",
        "cat": "text", "marker": "text", "partition_date": "date",
    }
    rows = sql(pg_url, f'SELECT i32, i64, f, s, b, ts, tz, day, dec, cat FROM published."{asset}" ORDER BY i32')
    assert rows[0][:5] == (1, 2**40, 0.5, "a,\"b\"\nc", True)
    assert rows[1][:5] == (2, None, None, None, False)
    assert rows[0][5] == datetime(2022, 10, 1, 10, 0, 0, 123456)
    assert rows[0][6] == datetime(2022, 10, 1, 2, 0, tzinfo=timezone.utc)
    assert rows[0][7:] == (datetime(2022, 9, 30).date(), Decimal("1.25"), "x")
    assert rows[1][7:] == (None, Decimal("-3.50"), "y")


def test_days_without_rows_take_the_types_of_the_days_with_rows(pg_url, sqlite_catalog, warehouse, tables):
    """An empty frame's columns have no real type (pandas' float, Arrow's null): a first day without rows made the
    table with those types, and every day with rows after was refused as a changed type."""
    asset = "t_empty_first"
    published(sqlite_catalog, warehouse, asset, D1, "run-empty", rows=0)
    tables.sync(sqlite_catalog, asset)
    published(sqlite_catalog, warehouse, asset, D2, "run-full", rows=3)
    published(sqlite_catalog, warehouse, asset, D3, "run-empty-later", rows=0)
    tables.sync(sqlite_catalog, asset)
    assert days_of(pg_url, asset) == {D2: (3, "run-full")}
    assert tables.lag(sqlite_catalog, asset).in_line
    assert sql(pg_url, f'SELECT max(n), max(marker) FROM published."{asset}"') == [(2, "run-full")]
    assert tables.serving(asset) == pointers_of(sqlite_catalog, asset, DAYS)


def test_a_new_column_joins_the_table_and_a_changed_type_is_refused(pg_url, sqlite_catalog, warehouse, tables):
    asset = "t_evolve"
    published(sqlite_catalog, warehouse, asset, D1, "run-a")
    tables.sync(sqlite_catalog, asset)
    wider = pd.DataFrame({"n": [1], "marker": ["run-b"], "amount": [2.0], "note": ["new"]})
    published(sqlite_catalog, warehouse, asset, D2, "run-b", frame=wider)
    tables.sync(sqlite_catalog, asset)
    assert sql(pg_url, f'SELECT partition_date::text, note FROM published."{asset}" WHERE n = 1 ORDER BY 1') == [
        (D1, None), (D2, "new")]

    changed = pd.DataFrame({"n": ["one"], "marker": ["run-c"], "amount": [2.0]})
    published(sqlite_catalog, warehouse, asset, D3, "run-c", frame=changed)
    with pytest.raises(PgTableError, match="column 'n' is bigint in the table but text"):
        tables.sync(sqlite_catalog, asset)
    assert set(days_of(pg_url, asset)) == {D1, D2}
    assert tables.lag(sqlite_catalog, asset).days_behind == (D3,)
