"""Batched runs (--partitions-per-run K): one run, still one version, check set and publish per day."""

from __future__ import annotations

import json

import dagster as dg
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.core import request_model as M
from backfill_assets.core.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.core.ledger import Ledger
from backfill_assets.defs.local_runs import run_partitions

from .driver_harness import drive

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05"]


def _create(*args: str) -> str:
    result = CliRunner().invoke(cli, ["request", "create", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["request_id"]


def test_a_bad_day_is_rejected_alone_while_the_rest_of_the_batch_publishes(env):
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS]))
    conf = json.dumps({"inject_defect": {"2022-09-03": {ORDER_FACTS: "duplicate_keys"}}})
    rid = _create("--assets", ORDER_FACTS, "--from", DAYS[0], "--to", DAYS[-1], "--partitions-per-run", "5",
                  "--conf", conf)
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [(DAYS[0], (ORDER_FACTS,))]
    [run] = env.instance.get_runs(filters=dg.RunsFilter(tags={"backfill/request_id": rid}))
    assert run.status == dg.DagsterRunStatus.FAILURE
    decisions = {c["partition_key"]: c["decision"] for c in Ledger(env.catalog).cells(rid)}
    assert decisions == {d: (M.REJECTED if d == "2022-09-03" else M.PUBLISHED) for d in DAYS}
    for day in DAYS:
        [version] = env.catalog.versions_of(ORDER_FACTS, day)
        assert version.dagster_run_id == run.run_id
        assert version.state == ("REJECTED" if day == "2022-09-03" else "PUBLISHED")
        assert version.input_versions == {f"{RAW_ORDERS}/{day}": env.catalog.current(RAW_ORDERS, day).version_id}
    materialized = env.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(ORDER_FACTS)), limit=50
    ).records
    assert sorted(r.partition_key for r in materialized) == [d for d in DAYS if d != "2022-09-03"]
    history = env.instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(ORDER_FACTS), "primary_key_unique"), limit=50
    )
    by_day = {h.partition: h.status.value for h in history}
    assert by_day == {d: ("FAILED" if d == "2022-09-03" else "SUCCEEDED") for d in DAYS}

    report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
    t = report["totals"]
    assert (t["planned"], t["runs_created"], t["attempts"], t["published"], t["rejected"], t["gaps"]) == (5, 1, 5, 4, 1, 0)


def test_batched_request_runs_upstream_asset_batches_before_downstream(env):
    rid = _create("--assets", f"{RAW_ORDERS},{ORDER_FACTS}", "--from", DAYS[0], "--to", DAYS[-1],
                  "--partitions-per-run", "3", "--max-active", "2")
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [
        (DAYS[0], (RAW_ORDERS,)), (DAYS[3], (RAW_ORDERS,)), (DAYS[0], (ORDER_FACTS,)), (DAYS[3], (ORDER_FACTS,)),
    ]
    assert [k for _, _, k in submitted][0] == f"{rid}/{DAYS[0]}..{DAYS[2]}/1"
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    assert all(env.catalog.current(ORDER_FACTS, d).request_id == rid for d in DAYS)
