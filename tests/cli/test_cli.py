"""The CLI as a new user runs it: seed, versions --json, read, rollback; bad input changes nothing."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store import schema
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from tests.orders import run_partitions

DAY = "2022-09-01"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _snapshot(env) -> dict:
    """Row counts of every catalog table plus every file under DAGSTER_HOME: the whole observable state."""
    counts = {}
    with env.catalog.engine.connect() as conn:
        for table in schema.metadata.sorted_tables:
            counts[table.name] = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
    files = sorted(str(p.relative_to(env.home)) for p in env.home.rglob("*") if p.is_file() and "-wal" not in p.name)
    return {"tables": counts, "files": [f for f in files if not f.endswith(("-shm", "-wal"))]}


def test_versions_json_reports_state_rows_digest_and_the_four_times(env):
    [run] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    result = invoke("versions", DAILY_REVENUE, DAY, "--json")
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)
    assert row["state"] == "PUBLISHED" and row["current"] is True and row["logical_run_id"] == run.run_id
    assert row["sha256"] == hashlib.sha256(Path(row["path"]).read_bytes()).hexdigest()
    assert row["rows"] == len(pd.read_parquet(row["path"]))
    for field in ("interval_start", "interval_end", "requested_at", "started_at", "ended_at", "published_at"):
        assert row[field] and "+00:00" in row[field], field


def test_versions_shows_the_interval_in_business_time_and_each_versions_pointer_history(env):
    [first] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    assert invoke("rollback", DAILY_REVENUE, DAY, "--reason", "check the history").exit_code == 0
    rows = json.loads(invoke("versions", DAILY_REVENUE, DAY, "--json").output)
    restored = next(r for r in rows if r["logical_run_id"] == first.run_id)
    assert restored["interval_start_local"] == "2022-09-01T00:00:00+08:00"
    assert restored["interval_end_local"] == "2022-09-02T00:00:00+08:00"
    assert restored["interval_start"].startswith("2022-08-31T16:00:00") and restored["timezone"] == "Asia/Shanghai"
    # Published once, restored once: the original publish time stays, the restore has its own time.
    assert [h["action"] for h in restored["history"]] == ["publish", "rollback"]
    assert restored["history"][0]["at"] == restored["published_at"] < restored["history"][1]["at"]
    human = invoke("versions", DAILY_REVENUE, DAY).output
    assert "2022-09-01T00:00:00+08:00" in human and "rollback" in human and "check the history" in human


def test_rollback_that_nobody_read_says_so_in_a_sentence(env):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    result = invoke("rollback", DAILY_REVENUE, DAY, "--reason", "nobody read it")
    assert result.exit_code == 0, result.output
    last = result.output.strip().splitlines()[-1]
    said = "No consumer (a downstream version or an external reader) read the rolled-back version."
    assert last == said, result.output


def test_versions_of_a_side_effect_asset_lists_its_outbox_deliveries(env):
    approved = {T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "cfo"}  # a past day's alert needs an approver
    assert run_partitions(env.instance, [DAY], assets=[*PIPELINE, REVENUE_ALERT], tags=approved)[0].success
    result = invoke("versions", REVENUE_ALERT, DAY, "--json")
    assert result.exit_code == 0, result.output
    [delivery] = json.loads(result.output)
    assert delivery["asset"] == REVENUE_ALERT and delivery["sent_at"] and delivery["idempotency_key"]
    assert "outbox deliveries" in invoke("versions", REVENUE_ALERT, DAY).output


def test_read_json_carries_the_identity_of_the_version_read(env):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    out = json.loads(invoke("read", DAILY_REVENUE, DAY, "--json").output)
    current = env.catalog.current(DAILY_REVENUE, DAY)
    assert (out["version_id"], out["sha256"], out["rows"]) == (current.version_id, current.sha256, current.rows)
    assert len(out["records"]) == current.rows and "revenue_cny" in out["records"][0]


def test_read_returns_published_data_and_records_the_read(env):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    result = invoke("read", DAILY_REVENUE, DAY, "--format", "json", "--reader", "finance-dashboard")
    assert result.exit_code == 0, result.output
    records = json.loads(result.output)
    current = env.catalog.current(DAILY_REVENUE, DAY)
    assert len(records) == current.rows
    consumers = env.catalog.consumers_of(current.version_id)
    assert [c.consumer for c in consumers] == ["external:finance-dashboard"]
    csv = invoke("read", DAILY_REVENUE, DAY)
    assert list(pd.read_csv(io.StringIO(csv.output)).columns) == ["business_date", "region", "orders", "revenue_cny"]


def test_rollback_restores_previous_version_and_lists_consumers(env):
    [first] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    [second] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    invoke("read", ORDER_FACTS, DAY, "--reader", "notebook")
    result = invoke("rollback", ORDER_FACTS, DAY, "--reason", "bad fx table", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["taken_off"] == f"{ORDER_FACTS}/{DAY}/{second.run_id}/1"
    assert out["serving"] == f"{ORDER_FACTS}/{DAY}/{first.run_id}/1"
    consumers = {c["consumer"] for c in out["consumers"]}
    # The downstream daily_revenue version of the second run read it, and so did the notebook.
    assert f"{DAILY_REVENUE}/{DAY}/{second.run_id}/1" in consumers and "external:notebook" in consumers
    states = {v.logical_run_id: v.state for v in env.catalog.versions_of(ORDER_FACTS, DAY)}
    assert states == {first.run_id: "PUBLISHED", second.run_id: "ROLLED_BACK"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["versions", "no_such_asset", DAY], "unknown asset"),
        (["versions", DAILY_REVENUE, "2022-13-01"], "not a valid calendar date"),
        (["versions", DAILY_REVENUE, "../../etc"], "YYYY-MM-DD"),
        (["read", DAILY_REVENUE, "2022-09-01\x00"], "YYYY-MM-DD"),
        (["read", DAILY_REVENUE, "2021-01-01"], "before the first partition"),
        (["read", DAILY_REVENUE, "2022-09-03"], "no published version"),
        (["read", DAILY_REVENUE, DAY, "--version", "daily_revenue/../x/1"], "contains '..'"),
        (["rollback", DAILY_REVENUE, DAY, "--reason", "x"], "no previous verified version"),
        (["rollback", DAILY_REVENUE, DAY, "--reason", "  "], "--reason"),
        (["rollback", DAILY_REVENUE, DAY, "--reason", "x", "--to", "nope/2022-09-01/r/1"], "unknown version"),
        (["seed", "--from", "2022-10-05", "--to", "2022-10-01"], "before --from"),
        (["seed", "--from", "2022-10-01", "--to", "2022-10-02", "--orders-per-day", "0"], "--per-day 0"),
    ],
)
def test_bad_input_is_one_line_error_and_changes_nothing(env, args, message):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    before = _snapshot(env)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert "Traceback" not in result.output
    assert _snapshot(env) == before


@pytest.mark.parametrize("given", ["environment", "--home"])
def test_a_home_whose_path_holds_a_question_mark_is_refused_before_anything_is_made(tmp_path, monkeypatch, given):
    """SQLite URLs end at a "?": a catalog or Dagster's storage made from such a folder would land beside it."""
    home = tmp_path / "team?x" / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home) if given == "environment" else str(tmp_path / "unused"))
    args = ["request", "list"] if given == "environment" else ["--home", str(home), "request", "list"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: the Dagster instance folder") and "'?'" in result.output, result.output
    assert list(tmp_path.iterdir()) == []
