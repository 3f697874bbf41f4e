"""The published tables through the doors a user has: a step's publish reaches the Iceberg table, `tables` says
whether each table is in line, `tables sync` and the operations that move pointers switch it, gc expires its
snapshots, and bad settings or names are refused with one line, changing nothing."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pyiceberg.catalog import load_catalog

from backfill_assets.cli import cli
from backfill_assets.engine.model.settings import ENV_PUBLISHED_TABLES
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.assets import table_sync
from tests.driver_harness import drive
from tests.orders import run_partitions

DAY, NEXT = "2022-09-01", "2022-09-02"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def iceberg_table(env, asset: str):
    catalog = load_catalog("backfill_assets", type="sql", uri=f"sqlite:///{env.home}/iceberg_catalog.db")
    return catalog.load_table(f"published.{asset}")


def table_files(env, asset: str) -> dict[str, str]:
    """Each day of the table's current snapshot → the data file it reads."""
    table = iceberg_table(env, asset)
    return {str(task.file.partition[0]): task.file.file_path for task in table.scan().plan_files()}


def test_a_step_publishes_into_the_iceberg_table_and_tables_says_in_line(env):
    run_partitions(env.instance, [DAY, NEXT], assets=PIPELINE)
    current = {d: env_catalog(env).current(DAILY_REVENUE, d) for d in (DAY, NEXT)}
    files = table_files(env, DAILY_REVENUE)
    assert {d: files[_epoch_day(d)] for d in (DAY, NEXT)} == {d: current[d].path for d in (DAY, NEXT)}
    frame = iceberg_table(env, DAILY_REVENUE).scan().to_pandas()
    assert len(frame) == sum(v.rows for v in current.values())
    assert sorted(str(d) for d in frame[DAY_COLUMN].unique()) == [DAY, NEXT]

    result = invoke("tables", "--json")
    assert result.exit_code == 0, result.output
    lags = {row["table"]: row for row in json.loads(result.output)}
    assert lags[f"published.{DAILY_REVENUE}"]["in_line"] and lags[f"published.{DAILY_REVENUE}"]["days_behind"] == []


def test_a_long_chunk_step_shows_its_days_in_the_table_as_it_goes(env, monkeypatch):
    """A chunk step syncs every SYNC_EVERY_S as well as at its end: with the interval at 0, each day of a 3-day chunk
    reaches the table before the next is gated (one snapshot per day, each holding one more day)."""
    monkeypatch.setattr(table_sync, "SYNC_EVERY_S", 0.0)
    days = [DAY, NEXT, "2022-09-03"]
    rid = invoke("request", "create", "--assets", RAW_ORDERS, "--from", days[0], "--to", days[-1],
                 "--partitions-per-run", "3", "--max-active", "1", "--json")
    assert rid.exit_code == 0, rid.output
    assert len(drive(env, json.loads(rid.output)["request_id"])) == 1  # one chunk run
    table = iceberg_table(env, RAW_ORDERS)
    held = [len({r[DAY_COLUMN] for r in table.scan(snapshot_id=s.snapshot_id).to_arrow().to_pylist()})
            for s in sorted(table.snapshots(), key=lambda s: s.sequence_number)]
    assert held == [1, 2, 3]


def test_a_table_left_behind_is_reported_then_brought_in_line_by_tables_sync(env, monkeypatch):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    monkeypatch.setenv(ENV_PUBLISHED_TABLES, "none")  # the next day's steps publish without touching the table
    run_partitions(env.instance, [NEXT], assets=PIPELINE)
    monkeypatch.delenv(ENV_PUBLISHED_TABLES)

    behind = invoke("tables", "--asset", DAILY_REVENUE)
    assert behind.exit_code == 1 and "behind: 1 day(s) not switched (2022-09-02)" in behind.output, behind.output
    synced = invoke("tables", "sync", "--asset", DAILY_REVENUE)
    assert synced.exit_code == 0 and "1 day(s) switched" in synced.output, synced.output
    assert invoke("tables", "--asset", DAILY_REVENUE).exit_code == 0
    assert table_files(env, DAILY_REVENUE)[_epoch_day(NEXT)] == env_catalog(env).current(DAILY_REVENUE, NEXT).path


def test_a_rollback_switches_the_table_back_and_gc_expires_what_it_no_longer_serves(env):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    first = env_catalog(env).current(DAILY_REVENUE, DAY)
    run_partitions(env.instance, [DAY], assets=[DAILY_REVENUE])
    second = env_catalog(env).current(DAILY_REVENUE, DAY)
    assert second.version_id != first.version_id and table_files(env, DAILY_REVENUE)[_epoch_day(DAY)] == second.path

    rolled = invoke("rollback", DAILY_REVENUE, DAY, "--reason", "back to the first", "--json")
    assert rolled.exit_code == 0, rolled.output
    assert [r["days"] for r in json.loads(rolled.output)["tables"]["synced"]] == [[DAY]]
    assert table_files(env, DAILY_REVENUE)[_epoch_day(DAY)] == first.path
    assert len(iceberg_table(env, DAILY_REVENUE).snapshots()) == 3

    # Retention 0: every snapshot but the current one expires, so the rolled-back version's file goes too.
    purged = invoke("gc", "--older-than", "0", "--json")
    assert purged.exit_code == 0, purged.output
    assert second.version_id in {p["version_id"] for p in json.loads(purged.output)}
    table = iceberg_table(env, DAILY_REVENUE)
    assert len(table.snapshots()) == 1 and len(table.scan().to_arrow()) == first.rows


@pytest.mark.parametrize(
    ("args", "env_value", "message"),
    [
        (["tables", "--asset", "no_such_asset"], None, "is not a gated asset of this code location"),
        (["tables", "--asset", "../etc"], None, "asset name"),
        (["tables"], "iceberg,parquet_files", "BACKFILL_PUBLISHED_TABLES must be none, or a comma-separated list"),
    ],
)
def test_bad_names_and_settings_are_one_line_and_change_nothing(env, monkeypatch, args, env_value, message):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    before = iceberg_table(env, DAILY_REVENUE).metadata_location
    if env_value is not None:
        monkeypatch.setenv(ENV_PUBLISHED_TABLES, env_value)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output
    assert iceberg_table(env, DAILY_REVENUE).metadata_location == before


def test_files_only_mode_keeps_no_table(env, monkeypatch):
    monkeypatch.setenv(ENV_PUBLISHED_TABLES, "none")
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    assert not (env.home / "iceberg_catalog.db").exists()
    result = invoke("tables")
    assert result.exit_code == 0 and "no published tables" in result.output


def env_catalog(env):
    from backfill_assets.engine.store.catalog import Catalog

    return Catalog.of_settings(env.settings)


def _epoch_day(day: str) -> str:
    """A day as pyiceberg gives a date partition value (days since 1970-01-01), as text."""
    from datetime import date

    return str((date.fromisoformat(day) - date(1970, 1, 1)).days)


@pytest.mark.postgres
@pytest.mark.parametrize("catalog_on_postgres", [False, True], ids=["synced", "in-the-publish-transaction"])
def test_a_postgresql_table_serves_the_published_days_to_plain_sql(env, monkeypatch, pg_server, catalog_on_postgres):
    import psycopg2
    import sqlalchemy as sa

    from backfill_assets.engine.model.settings import ENV_CATALOG_URL, ENV_POSTGRES_TABLES_URL
    from backfill_assets.engine.store.storage import Warehouse
    from tests.conftest import fresh_pg_database

    with fresh_pg_database(pg_server) as url:
        monkeypatch.setenv(ENV_PUBLISHED_TABLES, "iceberg,postgres")
        monkeypatch.setenv(ENV_POSTGRES_TABLES_URL, url)
        if catalog_on_postgres:
            monkeypatch.setenv(ENV_CATALOG_URL, url)
            env.settings = type(env.settings).from_env()
        run_partitions(env.instance, [DAY, NEXT], assets=PIPELINE)
        run_partitions(env.instance, [NEXT], assets=[DAILY_REVENUE])  # a second version of one day
        catalog = env_catalog(env)
        served = {d: catalog.current(DAILY_REVENUE, d) for d in (DAY, NEXT)}
        dsn = sa.engine.make_url(url).render_as_string(hide_password=False)
        with psycopg2.connect(dsn) as conn, conn.cursor() as cursor:
            cursor.execute(f"SELECT partition_date::text, count(*), sum(orders) FROM published.{DAILY_REVENUE} "
                           "GROUP BY 1 ORDER BY 1")
            rows = cursor.fetchall()
        warehouse = Warehouse(env.settings.warehouse_root)
        frames = {d: warehouse.read_version(v) for d, v in served.items()}
        assert [(day, count) for day, count, _ in rows] == [(d, served[d].rows) for d in (DAY, NEXT)]
        assert [int(total) for _, _, total in rows] == [int(frames[d]["orders"].sum()) for d in (DAY, NEXT)]
        lags = json.loads(invoke("tables", "--json").output)
        assert {lag["kind"] for lag in lags} == {"iceberg", "postgres"} and all(lag["in_line"] for lag in lags)
