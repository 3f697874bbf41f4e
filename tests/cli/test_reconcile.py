"""Reconcile tells the truth: counts, duplicates, crash gaps and their repair, the HTML page; plus gc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.wap.faults import AFTER_DATA_FILE, AFTER_PUBLISH_COMMIT, ENV_FAULT
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_tags_for
from tests.driver_harness import drive
from tests.orders import GRAPH, run_partitions

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _create(*args: str) -> str:
    result = invoke("request", "create", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["request_id"]


def _reconcile(request_id: str, *extra: str) -> dict:
    result = CliRunner().invoke(cli, ["reconcile", request_id, "--json", *extra])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def test_reconcile_counts_equal_the_truth(env, tmp_path):
    days = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05"]
    assert all(r.success for r in run_partitions(env.instance, days, assets=[RAW_ORDERS]))
    assert run_partitions(env.instance, ["2022-09-03"], assets=[ORDER_FACTS])[0].success
    bad = {"2022-09-04": {"ops": {ORDER_FACTS: {"config": {"defect": "drop_rows"}}}}}
    assert not run_partitions(env.instance, ["2022-09-04"], assets=[ORDER_FACTS], run_config_for=bad)[0].success

    conf = json.dumps({ORDER_FACTS: {"defect_days": {"2022-09-02": "bad_schema"}}})
    # One run per interval (5 days on 1 slot would batch under auto): the counts below are per-interval runs.
    rid = _create("--assets", ORDER_FACTS, "--from", days[0], "--to", days[-1], "--reprocess", "failed",
                  "--max-active", "1", "--partitions-per-run", "1", "--conf", conf)
    submitted = drive(env, rid, stop_after_ticks=3)
    assert [p for p, _, _ in submitted] == ["2022-09-01", "2022-09-02", "2022-09-04"]
    # The same interval published twice inside the request: a duplicate reconcile must count.
    record = Ledger(env.catalog).get(rid)
    execute_again = [s for s in submitted if s[0] == "2022-09-04"][0]
    run_partitions(env.instance, ["2022-09-04"], assets=list(execute_again[1]),
                   tags={**run_tags_for(record), RUN_KEY_TAG: execute_again[2]})
    assert invoke("request", "cancel", rid).exit_code == 0

    report = _reconcile(rid, "--html", str(tmp_path / "r.html"))
    t = report["totals"]
    assert (t["planned"], t["published"], t["rejected"], t["skipped"], t["cancelled"]) == (5, 2, 1, 1, 1)
    assert (t["attempts"], t["runs_created"], t["duplicate_publishes"], t["in_flight"]) == (4, 4, 1, 0)
    assert report["complete"] is False
    decisions = {c["partition_key"]: c["decision"] for c in report["cells"]}
    assert decisions == {"2022-09-01": "published", "2022-09-02": "rejected", "2022-09-03": "skipped",
                         "2022-09-04": "published", "2022-09-05": "cancelled"}
    fixed = [c for c in report["cells"] if c["partition_key"] == "2022-09-04"][0]["versions"][0]
    assert fixed["replaced_version_id"] is None  # nothing was published before: the old one was rejected
    html = (tmp_path / "r.html").read_text()
    for day in days:
        assert f'id="{ORDER_FACTS}-{day}"' in html


def test_version_report_has_change_and_recomputed_flag(env):
    pipeline = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
    assert all(r.success for r in run_partitions(env.instance, ["2022-09-01"], assets=pipeline))
    assert run_partitions(env.instance, ["2022-09-01"], assets=[ORDER_FACTS])[0].success  # new upstream version
    rid = _create("--assets", DAILY_REVENUE, "--from", "2022-09-01", "--to", "2022-09-01", "--reprocess", "completed")
    drive(env, rid)
    report = _reconcile(rid)
    [version] = report["cells"][0]["versions"]
    assert version["recomputed_on_current_upstream"] is True
    assert version["change"] == {"rows": 0}  # same numbers, recomputed from a new upstream version
    assert report["complete"] is True and report["totals"]["gaps"] == 0


def _crash(env, record, submission, fault: str) -> int:
    args = {"partition": submission.partition, "assets": list(submission.assets),
            "tags": {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}}
    proc = subprocess.run(
        [sys.executable, "-m", "tests.crash_runner", json.dumps(args)],
        cwd=REPO, env={**os.environ, ENV_FAULT: fault}, capture_output=True, timeout=120,
    )
    return proc.returncode


def test_crash_between_catalog_publish_and_dagster_event_is_found_and_repaired(env):
    assert run_partitions(env.instance, ["2022-09-02"], assets=[RAW_ORDERS])[0].success
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-02", "--to", "2022-09-02")
    record = Ledger(env.catalog).get(rid)
    [submission] = drive_request(GRAPH, env.instance, env.catalog, record, code_version())
    assert _crash(env, record, submission, AFTER_PUBLISH_COMMIT) == -9

    [version] = env.catalog.versions_of(ORDER_FACTS, "2022-09-02")
    assert version.state == "PUBLISHED"
    assert env.catalog.current(ORDER_FACTS, "2022-09-02").version_id == version.version_id
    report = _reconcile(rid)
    assert [g["version_id"] for g in report["gaps"]] == [version.version_id]
    assert "without a Dagster materialization" in report["gaps"][0]["gap"]

    # The step died before its last act too: the published table lags the pointer by that day.
    assert [(t["table"], t["days_behind"]) for t in report["tables"] if not t["in_line"]] == [
        (f"published.{ORDER_FACTS}", ["2022-09-02"])]

    repaired = _reconcile(rid, "--repair")
    assert repaired["repaired"][0] == {"version_id": version.version_id, "action": "recorded materialization"}
    [synced] = repaired["repaired"][1:]
    assert (synced["action"], synced["table"], synced["days"]) == ("table synced", f"published.{ORDER_FACTS}",
                                                                  ["2022-09-02"])
    assert all(t["in_line"] for t in repaired["tables"])
    assert repaired["totals"]["gaps"] == 0
    records = env.instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(ORDER_FACTS)), limit=10)
    assert [r.asset_materialization.metadata["version_id"].value for r in records.records] == [version.version_id]
    assert [row["action"] for row in env.catalog.log_after(0) if row["version_id"] == version.version_id] == [
        "publish", "repair"]


def test_crash_mid_write_is_found_and_abandoned(env):
    assert run_partitions(env.instance, ["2022-09-03"], assets=[RAW_ORDERS])[0].success
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-03", "--to", "2022-09-03")
    record = Ledger(env.catalog).get(rid)
    [submission] = drive_request(GRAPH, env.instance, env.catalog, record, code_version())
    assert _crash(env, record, submission, AFTER_DATA_FILE) == -9
    [version] = env.catalog.versions_of(ORDER_FACTS, "2022-09-03")
    assert version.state == "WRITING" and env.catalog.current(ORDER_FACTS, "2022-09-03") is None
    # Run monitoring marks a run whose process vanished as failed; do what it does.
    [run] = env.instance.get_runs(filters=dg.RunsFilter(tags={"backfill/request_id": rid}))
    env.instance.report_run_failed(run)
    report = _reconcile(rid)
    assert report["gaps"][0]["version_id"] == version.version_id and "stuck in WRITING" in report["gaps"][0]["gap"]
    _reconcile(rid, "--repair")
    assert env.catalog.get(version.version_id).state == "ABANDONED"


def test_rollback_cascade_creates_a_request_for_every_consumer(env):
    data = list(GRAPH.data_assets)  # a past day's alert would need an approver
    runs = run_partitions(env.instance, ["2022-09-01", "2022-09-02", "2022-09-03"], assets=data)
    assert all(r.success for r in runs)
    downstream = [ORDER_FACTS, DAILY_REVENUE, CUSTOMER_SNAPSHOT]
    assert run_partitions(env.instance, ["2022-09-02"], assets=downstream)[0].success
    result = invoke("rollback", ORDER_FACTS, "2022-09-02", "--reason", "bad fx", "--cascade", "--json")
    out = json.loads(result.output)
    consumers = {c["consumer_version_id"].split("/")[0] for c in out["consumers"] if c["consumer_version_id"]}
    assert consumers == {DAILY_REVENUE, CUSTOMER_SNAPSHOT}
    rid = out["cascade_request_id"]
    cells = {(c.asset, c.partition_key): c.decision for c in Ledger(env.catalog).cells(rid)}
    assert cells == {(DAILY_REVENUE, "2022-09-02"): "pending", (CUSTOMER_SNAPSHOT, "2022-09-02"): "pending"}
    drive(env, rid)
    restored = env.catalog.current(ORDER_FACTS, "2022-09-02").version_id
    assert env.catalog.current(DAILY_REVENUE, "2022-09-02").input_versions == {f"{ORDER_FACTS}/2022-09-02": restored}
    # The cumulative snapshot of the next day followed through the cascade policy of the new request.
    assert env.catalog.current(CUSTOMER_SNAPSHOT, "2022-09-03").request_id == rid
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED


def test_gc_purges_old_versions_but_never_current_or_rollback_target(env):
    for _ in range(3):
        assert run_partitions(env.instance, ["2022-09-01"], assets=[RAW_ORDERS])[0].success
    bad = {"2022-09-01": {"ops": {RAW_ORDERS: {"config": {"defect": "drop_rows"}}}}}
    run_partitions(env.instance, ["2022-09-01"], assets=[RAW_ORDERS], run_config_for=bad)
    v1, v2, v3, rejected = env.catalog.versions_of(RAW_ORDERS, "2022-09-01")
    assert (v1.state, v2.state, v3.state, rejected.state) == ("SUPERSEDED", "SUPERSEDED", "PUBLISHED", "REJECTED")

    dry = json.loads(invoke("gc", "--older-than", "0", "--dry-run", "--json").output)
    assert {v["version_id"] for v in dry} == {v1.version_id, rejected.version_id}
    assert env.catalog.get(v1.version_id).state == "SUPERSEDED" and Path(v1.path).exists()

    done = json.loads(invoke("gc", "--older-than", "0", "--json").output)
    assert {v["version_id"] for v in done} == {v1.version_id, rejected.version_id}
    assert env.catalog.get(v1.version_id).state == "PURGED" and not Path(v1.path).exists()
    assert Path(v2.path).exists() and Path(v3.path).exists(), "rollback target and current survive"
    assert json.loads(invoke("gc", "--older-than", "30", "--json").output) == []


def test_a_day_wiped_from_dagster_after_its_run_succeeded_is_still_a_gap(env):
    # Reconcile takes a version whose own run succeeded as materialized without reading its events back, but only
    # while Dagster holds some materialization of that day: once the asset is wiped, the version is looked up again.
    assert run_partitions(env.instance, ["2022-09-06"], assets=[RAW_ORDERS])[0].success
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-06", "--to", "2022-09-06")
    drive(env, rid)
    assert _reconcile(rid)["totals"]["gaps"] == 0
    [version] = env.catalog.versions_of(ORDER_FACTS, "2022-09-06")

    env.instance.wipe_assets([dg.AssetKey(ORDER_FACTS)])  # SQLite storage wipes whole assets only
    report = _reconcile(rid)
    assert [g["version_id"] for g in report["gaps"]] == [version.version_id]
    assert "without a Dagster materialization" in report["gaps"][0]["gap"]
