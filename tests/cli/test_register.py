"""`register`: a day's data fixed outside the platform, through every door against a real instance and catalog. A
good file becomes a version of its own run, copied into the warehouse, audited and published by the same
compare-and-swap as a computed one, and every reader sees it (`read`, `versions`, the Iceberg table through DuckDB
and polars, Dagster's partition page); a file failing a check is REJECTED while the previous version serves on; a
registered version rolls back like any other; and every bad input is one line naming its field, changing nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import pandas as pd
import polars as pl
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from pyiceberg.catalog import load_catalog

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model.errors import NotAuthorized
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.operations import Operations
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.operation_jobs import op_name
from tests.access_location import APPROVER, STRANGER
from tests.access_location import defs as ACCESS_DEFS
from tests.orders import DEFS, run_partitions

DAY = "2022-09-01"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
REGISTER_JOB = "backfill_register"
RUN_ID = re.compile(r"^register-\d{8}T\d{6}-[0-9a-f]{8}$")
# The record every door prints (the CLI's --json, the Launchpad's result, a Python caller's as_dict()).
RECORD_KEYS = {"asset", "partition_key", "version_id", "state", "published", "serving", "taken_off", "seq", "rows",
               "sha256", "source", "checks", "failed_checks", "error", "override", "consumers", "cascade_request_id",
               "dagster_event", "tables"}


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def register_cli(path: Path | str, *extra: str, asset: str = DAILY_REVENUE, day: str = DAY):
    return invoke("register", asset, day, "--path", str(path), "--approved-by", "ana", "--reason",
                  "refunds re-keyed by hand", "--json", *extra)


def catalog_rows(env) -> dict[str, list]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(t)).all()), key=repr)
                for t in schema.metadata.sorted_tables}


def warehouse_files(env) -> list[str]:
    return sorted(str(p) for p in Path(env.settings.warehouse_root).rglob("*") if p.is_file())


def fixed_file(env, tmp_path: Path, asset: str = DAILY_REVENUE, day: str = DAY, change=None) -> Path:
    """The serving version's rows as a person would save them after fixing them by hand (``change``: the fix)."""
    frame = env.warehouse.read_version(env.catalog.current(asset, day))
    frame = change(frame) if change else frame
    path = tmp_path / "inbox" / f"{asset.replace('/', '_')}-{day}.parquet"
    path.parent.mkdir(exist_ok=True)
    frame.to_parquet(path, index=False)
    return path


def rekeyed(frame: pd.DataFrame) -> pd.DataFrame:
    """The fix a person makes by hand: an order moved from one region to another (every total still agrees)."""
    fixed = frame.sort_values("region").reset_index(drop=True)
    fixed.loc[0, "orders"] += 1
    fixed.loc[1, "orders"] -= 1
    return fixed


def latest_materialization(env, asset: str, day: str) -> dict:
    filter_ = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day])
    [record] = env.instance.fetch_materializations(filter_, limit=1).records
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def iceberg_table(env, asset: str):
    catalog = load_catalog("backfill_assets", type="sql", uri=f"sqlite:///{env.home}/iceberg_catalog.db")
    return catalog.load_table(f"published.{asset}")


# ---- a good file ------------------------------------------------------------------------------------------------


def test_a_good_file_publishes_as_a_version_of_its_own_and_every_reader_sees_it(env, tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_ICEBERG_PLANNER", "pyiceberg")  # polars plans the scan with pyiceberg, as it says
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    served = env.catalog.current(DAILY_REVENUE, DAY)
    path = fixed_file(env, tmp_path, change=rekeyed)

    result = register_cli(path)

    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) == RECORD_KEYS
    assert (out["published"], out["state"], out["taken_off"]) == (True, "PUBLISHED", served.version_id)
    assert out["failed_checks"] == [] and {c["name"] for c in out["checks"]} >= {"row_count", "file_integrity"}
    version = env.catalog.get(out["version_id"])
    # Its own identity: its own run, attempt 1, lane manual, no request; the file named, never its folder.
    asset, day, run_id, attempt = out["version_id"].rsplit("/", 3)
    assert (asset, day, attempt) == (DAILY_REVENUE, DAY, "1") and RUN_ID.match(run_id)
    assert (version.logical_run_id, version.attempt_no, version.lane, version.request_id) == (run_id, 1, "manual", None)
    assert version.params["registered_file"]["file_name"] == path.name and str(tmp_path) not in json.dumps(out)
    # Copied into its own place in the warehouse, judged against the inputs a computation would read.
    assert version.path.startswith(env.settings.warehouse_root) and f"/_runs/{run_id}/attempt=1/" in version.path
    assert version.input_versions == {f"{ORDER_FACTS}/{DAY}": env.catalog.current(ORDER_FACTS, DAY).version_id}
    manifest = env.warehouse.read_manifest(version.path)
    assert (manifest["registered"]["approved_by"], manifest["registered"]["reason"]) == (
        "ana", "refunds re-keyed by hand")
    assert env.catalog.get(served.version_id).state == "SUPERSEDED"
    path.unlink()  # the version is a copy: the person's file may go

    read = invoke("read", DAILY_REVENUE, DAY, "--json")
    assert read.exit_code == 0, read.output
    read_back = json.loads(read.output)
    assert read_back["version_id"] == out["version_id"]
    assert pd.DataFrame(read_back["records"]).to_dict("records") == rekeyed(
        env.warehouse.read_version(served)).to_dict("records")
    versions = json.loads(invoke("versions", DAILY_REVENUE, DAY, "--json").output)
    mine = next(r for r in versions if r["version_id"] == out["version_id"])
    assert mine["current"] and [(o["action"], o["by"]) for o in mine["overrides"]] == [("register", "ana")]
    assert "override: register by ana" in invoke("versions", DAILY_REVENUE, DAY).output
    [trail] = [o for o in Operations(env.catalog).all() if o.operation == "register"]
    assert (trail.actor, trail.surface, trail.reason) == ("ana", "cli", "refunds re-keyed by hand")
    assert trail.outcome.startswith(f"published {out['version_id']} (was {served.version_id})")
    # Dagster's partition page names it, and who registered it.
    meta = latest_materialization(env, DAILY_REVENUE, DAY)
    assert (meta["version_id"], meta["registered_by"], meta["registered_file"]) == (
        out["version_id"], "ana", path.name)
    assert out["dagster_event"] == f"recorded a runless materialization of {out['version_id']}"
    # The published table switched at the publish: engines that know nothing of this library read the file.
    table = iceberg_table(env, DAILY_REVENUE)
    files = {str(t.file.partition[0]): t.file.file_path for t in table.scan().plan_files()}
    assert version.path in files.values()
    connection = table.scan().to_duckdb(table_name="daily_revenue")
    [by_duckdb] = connection.execute(
        f"SELECT count(*), sum(revenue_cny) FROM daily_revenue WHERE {DAY_COLUMN} = DATE '{DAY}'").fetchall()
    by_polars = pl.scan_iceberg(table).filter(pl.col(DAY_COLUMN) == pd.Timestamp(DAY).date()).collect()
    assert by_duckdb[0] == len(by_polars) == served.rows
    assert by_duckdb[1] == pytest.approx(float(by_polars["revenue_cny"].sum()))
    fixed = rekeyed(env.warehouse.read_version(served))
    assert sorted(by_polars.select("region", "orders").rows()) == sorted(
        zip(fixed["region"], fixed["orders"], strict=True))


def test_a_registered_version_rolls_back_and_its_readers_are_listed(env, tmp_path):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    served = env.catalog.current(DAILY_REVENUE, DAY).version_id
    registered = json.loads(register_cli(fixed_file(env, tmp_path)).output)["version_id"]
    assert invoke("read", DAILY_REVENUE, DAY, "--reader", "finance-dashboard").exit_code == 0

    rolled = invoke("rollback", DAILY_REVENUE, DAY, "--reason", "the hand fix was wrong", "--by", "ana", "--json")

    assert rolled.exit_code == 0, rolled.output
    out = json.loads(rolled.output)
    assert (out["taken_off"], out["serving"]) == (registered, served)
    assert [c["consumer"] for c in out["consumers"]] == ["external:finance-dashboard"]
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == served
    assert env.catalog.get(registered).state == "ROLLED_BACK"


# ---- a file failing a check ---------------------------------------------------------------------------------------


def test_a_file_failing_a_check_is_rejected_and_the_previous_version_still_serves(env, tmp_path):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    served = env.catalog.current(DAILY_REVENUE, DAY).version_id
    before = latest_materialization(env, DAILY_REVENUE, DAY)
    path = fixed_file(env, tmp_path, change=lambda frame: frame.iloc[1:])  # a region lost in the fix

    result = register_cli(path)

    assert result.exit_code == 1, result.output
    out = json.loads(result.output)
    assert (out["published"], out["state"], out["serving"]) == (False, "REJECTED", served)
    assert "row_count" in out["failed_checks"] and "row_count" in out["error"]
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == served
    rejected = env.catalog.get(out["version_id"])
    assert rejected.state == "REJECTED" and rejected.lane == "manual"
    assert latest_materialization(env, DAILY_REVENUE, DAY) == before  # Dagster's day still names the served one
    assert out["dagster_event"] == f"recorded a runless observation of {out['version_id']}"
    human = invoke("register", DAILY_REVENUE, DAY, "--path", str(path), "--approved-by", "ana", "--reason", "again")
    assert human.exit_code == 1 and "REJECTED" in human.output and "FAIL  row_count" in human.output
    assert f"still serving {served}" in human.output
    assert [o.operation for o in Operations(env.catalog).all()].count("register") == 2


# ---- the Python and Launchpad doors ------------------------------------------------------------------------------


def test_python_registers_a_source_extract_whose_checks_open_the_code_locations_resources(env, tmp_path):
    run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    path = fixed_file(env, tmp_path, asset=RAW_ORDERS)
    service = backfills_for_instance(DEFS, env.instance, env.catalog)

    done = service.register(RAW_ORDERS, DAY, str(path), "ana", "source re-exported by the vendor")

    # raw_orders' row count and totals come from the source (the orders_source resource), opened for the checks.
    assert done.published and not done.failed_checks, done.error
    assert set(done.as_dict()) == RECORD_KEYS
    assert env.catalog.current(RAW_ORDERS, DAY).version_id == done.version_id
    assert (done.override.action, done.override.decided_by) == ("register", "ana")
    assert Operations(env.catalog).all()[0].surface == "python"


def launch(env, config: dict, defs=DEFS) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def(REGISTER_JOB).execute_in_process(
        run_config={"ops": {op_name(REGISTER_JOB): {"config": config}}}, instance=env.instance,
        raise_on_error=False, tags={"dagster/user": "ana@example.com"},
    )


def test_the_launchpad_job_registers_or_fails_naming_the_failed_checks(env, tmp_path):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    served = env.catalog.current(RAW_ORDERS, DAY).version_id
    good = fixed_file(env, tmp_path, asset=RAW_ORDERS)
    config = {"asset": RAW_ORDERS, "partition_key": DAY, "approved_by": "ana", "reason": "vendor re-export"}

    run = launch(env, {**config, "path": str(good)})

    assert run.success, [e.message for e in run.all_events if e.is_failure]
    [output] = [e for e in run.events_for_node(op_name(REGISTER_JOB)) if e.is_successful_output]
    result = output.step_output_data.metadata["result"].value
    assert set(result) == RECORD_KEYS and result["published"] and result["taken_off"] == served
    assert result["override"]["by"] == "ana" and Operations(env.catalog).all()[0].surface == "launchpad"
    serving = result["version_id"]

    bad = fixed_file(env, tmp_path, asset=RAW_ORDERS, change=lambda frame: pd.concat([frame, frame.iloc[:1]]))
    run = launch(env, {**config, "path": str(bad)})

    assert not run.success
    [failure] = [e for e in run.all_events if e.is_step_failure]
    description = failure.step_failure_data.user_failure_data.description
    assert "REJECTED" in description and "primary_key_unique" in description and "row_count" in description
    assert env.catalog.current(RAW_ORDERS, DAY).version_id == serving

    before = catalog_rows(env)
    run = launch(env, {**config, "path": str(tmp_path / "inbox" / ".." / "x.parquet")})
    [failure] = [e for e in run.all_events if e.is_step_failure]
    assert "path" in failure.step_failure_data.user_failure_data.description and "'..'" in \
        failure.step_failure_data.user_failure_data.description
    assert catalog_rows(env) == before


def test_only_a_listed_approver_may_register(env, tmp_path):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    path = fixed_file(env, tmp_path)
    service = backfills_for_instance(ACCESS_DEFS, env.instance, env.catalog)
    before = catalog_rows(env)
    with pytest.raises(NotAuthorized, match="may not approve registering"):
        service.register(DAILY_REVENUE, DAY, str(path), STRANGER, "fixed by hand")
    assert catalog_rows(env) == before
    assert service.register(DAILY_REVENUE, DAY, str(path), APPROVER, "fixed by hand").published


# ---- bad input --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def published_env(refusal_env):
    run_partitions(refusal_env.instance, [DAY], assets=PIPELINE)
    return refusal_env


def _bad_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    csv = folder / "fixed.csv"
    csv.write_text("region,revenue_cny\nnorth,1.0\n")
    damaged = folder / "damaged.parquet"
    damaged.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    other_day = folder / "other_day.parquet"
    pd.DataFrame({"region": ["north"], DAY_COLUMN: [pd.Timestamp("2022-09-02").date()]}).to_parquet(other_day)
    return {"csv": csv, "damaged": damaged, "other_day": other_day, "folder": folder}


@pytest.mark.parametrize("args, field", [
    (["no_such_asset", DAY, "--path", "{good}"], "unknown asset"),
    ([REVENUE_ALERT, DAY, "--path", "{good}"], "is a side-effect asset"),
    ([DAILY_REVENUE, "2022-13-01", "--path", "{good}"], "2022-13-01"),
    ([DAILY_REVENUE, DAY, "--path", "{folder}/missing.parquet"], "--path"),
    ([DAILY_REVENUE, DAY, "--path", "{folder}"], "--path"),
    ([DAILY_REVENUE, DAY, "--path", "{csv}"], "--path"),
    ([DAILY_REVENUE, DAY, "--path", "{damaged}"], "--path"),
    ([DAILY_REVENUE, DAY, "--path", "{other_day}"], "--path"),
    ([DAILY_REVENUE, DAY, "--path", "{folder}/../../etc/passwd"], "--path"),
    ([DAILY_REVENUE, DAY, "--path", "s3://bucket/fixed.parquet"], "--path"),
])
def test_bad_input_is_one_line_naming_its_field_and_changes_nothing(published_env, tmp_path, args, field):
    env = published_env
    files = _bad_files(tmp_path / "bad")
    good = fixed_file(env, tmp_path)
    args = [a.format(good=good, **files) for a in args]
    before, stored = catalog_rows(env), warehouse_files(env)

    result = CliRunner().invoke(cli, ["register", *args, "--approved-by", "ana", "--reason", "fixed by hand"])

    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], result.output
    assert (catalog_rows(env), warehouse_files(env)) == (before, stored)


@pytest.mark.parametrize("who, reason, field", [
    ("ana\n", "fixed", "--approved-by"), ("   ", "fixed", "--approved-by"), ("ana", "   ", "--reason"),
])
def test_a_bad_approver_or_reason_is_refused_before_the_file_is_read(published_env, who, reason, field):
    env = published_env
    before = catalog_rows(env)
    result = CliRunner().invoke(cli, ["register", DAILY_REVENUE, DAY, "--path", "never-read.parquet",
                                      "--approved-by", who, "--reason", reason])
    assert result.exit_code == 2 and field in result.output, result.output
    assert catalog_rows(env) == before


# ---- on PostgreSQL -------------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_on_postgresql_the_table_switches_in_the_registrations_publish(env, monkeypatch, pg_server, tmp_path):
    """The catalog on PostgreSQL, its published table on the same database: the registered version's rows are what
    plain SQL reads once the command returns, and a rejected file leaves them as they were."""
    import psycopg2

    from backfill_assets.engine.model.settings import ENV_CATALOG_URL, ENV_POSTGRES_TABLES_URL, ENV_PUBLISHED_TABLES
    from tests.conftest import fresh_pg_database

    with fresh_pg_database(pg_server) as url:
        monkeypatch.setenv(ENV_PUBLISHED_TABLES, "postgres")
        monkeypatch.setenv(ENV_POSTGRES_TABLES_URL, url)
        monkeypatch.setenv(ENV_CATALOG_URL, url)
        env.settings = type(env.settings).from_env()
        run_partitions(env.instance, [DAY], assets=PIPELINE)
        dsn = sa.engine.make_url(url).render_as_string(hide_password=False)

        def served_rows() -> list[tuple]:
            with psycopg2.connect(dsn) as conn, conn.cursor() as cursor:
                cursor.execute(f"SELECT region, orders FROM published.{DAILY_REVENUE} WHERE partition_date = %s "
                               "ORDER BY region", (DAY,))
                return cursor.fetchall()

        computed = served_rows()
        out = json.loads(register_cli(fixed_file(env, tmp_path, change=rekeyed)).output)
        assert out["published"] and out["tables"]["failed"] == [], out
        fixed = served_rows()
        registered = env.warehouse.read_version(env.catalog.get(out["version_id"]))
        assert fixed != computed and fixed == sorted(
            zip(registered["region"], registered["orders"], strict=True))

        bad = fixed_file(env, tmp_path, change=lambda frame: frame.iloc[1:])
        result = register_cli(bad)
        assert result.exit_code == 1 and not json.loads(result.output)["published"]
        assert served_rows() == fixed and env.catalog.current(DAILY_REVENUE, DAY).version_id == out["version_id"]
