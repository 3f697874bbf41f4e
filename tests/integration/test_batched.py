"""Batched runs (--partitions-per-run K): one chunk run over several days and assets, still one version, check
set and publish per cell; a Dagster partition-range run of one asset keeps the same guarantees."""

from __future__ import annotations

import json

import dagster as dg
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import UPSTREAM_NOT_PUBLISHED
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.assets.chunks import CHUNK_JOB
from tests.driver_harness import drive
from tests.orders import run_partitions

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05"]


def _create(*args: str) -> str:
    result = CliRunner().invoke(cli, ["request", "create", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["request_id"]


def test_a_bad_day_is_rejected_alone_while_the_rest_of_the_batch_publishes(env):
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS]))
    conf = json.dumps({ORDER_FACTS: {"defect_days": {"2022-09-03": "duplicate_keys"}}})
    rid = _create("--assets", ORDER_FACTS, "--from", DAYS[0], "--to", DAYS[-1], "--partitions-per-run", "5",
                  "--max-active", "1", "--conf", conf)
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [(DAYS[0], (ORDER_FACTS,))]
    [run] = env.instance.get_runs(filters=dg.RunsFilter(tags={"backfill/request_id": rid}))
    assert run.status == dg.DagsterRunStatus.FAILURE and run.job_name == CHUNK_JOB
    decisions = {c.partition_key: c.decision for c in Ledger(env.catalog).cells(rid)}
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
    totals = (t["planned"], t["runs_created"], t["attempts"], t["published"], t["rejected"], t["gaps"])
    assert totals == (5, 1, 5, 4, 1, 0)


def test_batched_request_runs_every_asset_of_a_chunk_in_one_run_spread_over_the_free_slots(env):
    rid = _create("--assets", f"{RAW_ORDERS},{ORDER_FACTS}", "--from", DAYS[0], "--to", DAYS[-1],
                  "--partitions-per-run", "4", "--max-active", "2")
    submitted = drive(env, rid)
    # 5 days, 2 slots: 3 + 2 days rather than 4 + 1, each run writing both assets.
    both = (RAW_ORDERS, ORDER_FACTS)
    assert [(p, a) for p, a, _ in submitted] == [(DAYS[0], both), (DAYS[3], both)]
    assert [k for _, _, k in submitted] == [f"{rid}/{DAYS[0]}..{DAYS[2]}/1", f"{rid}/{DAYS[3]}..{DAYS[4]}/1"]
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    cells = Ledger(env.catalog).cells(rid)
    assert all(c.submitted_at and c.submitted_at <= c.updated_at for c in cells), cells
    for day in DAYS:
        facts = env.catalog.current(ORDER_FACTS, day)
        raw = env.catalog.current(RAW_ORDERS, day)
        assert facts.request_id == rid and raw.request_id == rid
        assert facts.logical_run_id == raw.logical_run_id  # one run wrote both
        assert facts.input_versions == {f"{RAW_ORDERS}/{day}": raw.version_id}


def test_a_rejected_upstream_day_stops_its_downstream_cells_only(env):
    conf = json.dumps({RAW_ORDERS: {"defect_days": {DAYS[2]: "drop_rows"}}})
    assets = f"{RAW_ORDERS},{ORDER_FACTS},{DAILY_REVENUE},{CUSTOMER_SNAPSHOT}"
    rid = _create("--assets", assets, "--from", DAYS[0], "--to", DAYS[-1], "--partitions-per-run", "5",
                  "--max-active", "1", "--conf", conf)
    submitted = drive(env, rid)
    # One chunk for the batchable assets, then the depends-on-past asset's days it can run, in one run, in order.
    assert [(p, a) for p, a, _ in submitted] == [
        (DAYS[0], (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE)),
        (DAYS[0], (CUSTOMER_SNAPSHOT,)),
    ]
    assert submitted[1][2] == f"{rid}/{DAYS[0]}..{DAYS[1]}/1"
    runs = env.instance.get_runs(filters=dg.RunsFilter(tags={"backfill/request_id": rid}, job_name=CHUNK_JOB))
    [chunk] = [r for r in runs if r.tags["dagster/run_key"] == submitted[0][2]]
    assert chunk.status == dg.DagsterRunStatus.FAILURE
    decisions = {(c.asset, c.partition_key): (c.decision, c.reason) for c in Ledger(env.catalog).cells(rid)}
    assert decisions[(RAW_ORDERS, DAYS[2])][0] == M.REJECTED
    assert decisions[(ORDER_FACTS, DAYS[2])] == (M.SKIPPED, UPSTREAM_NOT_PUBLISHED)
    assert decisions[(DAILY_REVENUE, DAYS[2])] == (M.SKIPPED, UPSTREAM_NOT_PUBLISHED)
    assert decisions[(CUSTOMER_SNAPSHOT, DAYS[2])] == (M.SKIPPED, UPSTREAM_NOT_PUBLISHED)
    assert decisions[(CUSTOMER_SNAPSHOT, DAYS[3])][0] == M.SKIPPED  # depends on the past
    for asset in (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE):
        for day in (DAYS[0], DAYS[1], DAYS[3], DAYS[4]):
            assert decisions[(asset, day)][0] == M.PUBLISHED, (asset, day)
    # Nothing of the rejected day's downstream was written from the version still serving.
    assert env.catalog.versions_of(ORDER_FACTS, DAYS[2]) == []
    failure = [e for e in env.instance.all_logs(chunk.run_id) if e.is_dagster_event and e.dagster_event.is_step_failure]
    message = failure[0].dagster_event.step_failure_data.error.message
    assert f"{RAW_ORDERS} {DAYS[2]} REJECTED" in message and f"{ORDER_FACTS} {DAYS[2]} not written" in message

    report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
    t = report["totals"]
    assert (t["planned"], t["published"], t["rejected"], t["skipped"], t["gaps"]) == (20, 14, 1, 5, 0)


def test_a_dagster_partition_range_run_still_gates_each_day(env):
    """A range run of one asset (Dagster's own batching) publishes per day and fails naming the bad day."""
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS]))
    bad = {DAYS[0]: {"ops": {ORDER_FACTS: {"config": {"defect_days": {DAYS[1]: "duplicate_keys"}}}}}}
    [run] = run_partitions(env.instance, [(DAYS[0], DAYS[-1])], assets=[ORDER_FACTS], run_config_for=bad)
    assert not run.success and f"{DAYS[1]} (" in run.failure
    states = {d: env.catalog.versions_of(ORDER_FACTS, d)[0].state for d in DAYS}
    assert states == {d: ("REJECTED" if d == DAYS[1] else "PUBLISHED") for d in DAYS}
    history = env.instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(ORDER_FACTS), "primary_key_unique"), limit=50
    )
    assert {h.partition: h.status.value for h in history} == {
        d: ("FAILED" if d == DAYS[1] else "SUCCEEDED") for d in DAYS
    }


def test_a_range_run_of_a_depends_on_past_asset_stops_at_the_first_day_it_does_not_publish(env):
    """Each later day would read a previous day this run did not publish: not attempted, named in the failure, and
    production's versions keep serving them (as a chunk run stops)."""
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS]))
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[CUSTOMER_SNAPSHOT]))
    serving = {d: env.catalog.current(CUSTOMER_SNAPSHOT, d).version_id for d in DAYS}
    bad = {DAYS[0]: {"ops": {CUSTOMER_SNAPSHOT: {"config": {"defect_days": {DAYS[1]: "duplicate_keys"}}}}}}
    [run] = run_partitions(env.instance, [(DAYS[0], DAYS[-1])], assets=[CUSTOMER_SNAPSHOT], run_config_for=bad)
    assert not run.success
    assert "1 of 2 day(s) REJECTED" in run.failure and f"{DAYS[1]} (" in run.failure, run.failure
    assert f"{DAYS[2]}..{DAYS[-1]} not attempted (previous day {DAYS[1]} not published)" in run.failure
    states = {d: [v.state for v in env.catalog.versions_of(CUSTOMER_SNAPSHOT, d)] for d in DAYS}
    assert states == {DAYS[0]: ["SUPERSEDED", "PUBLISHED"], DAYS[1]: ["PUBLISHED", "REJECTED"],
                      **{d: ["PUBLISHED"] for d in DAYS[2:]}}, states
    assert all(env.catalog.current(CUSTOMER_SNAPSHOT, d).version_id == serving[d] for d in DAYS[1:])


def test_by_default_a_long_enough_request_is_batched_into_one_chunk_run_per_slot(env):
    days = [f"2022-09-0{d}" for d in range(1, 9)]
    rid = _create("--assets", RAW_ORDERS, "--from", days[0], "--to", days[-1], "--max-active", "2")
    record = Ledger(env.catalog).get(rid)
    assert (record.spec.partitions_per_run, record.spec.partitions_per_run_auto) == (4, True)
    submitted = drive(env, rid)
    assert [k for _, _, k in submitted] == [f"{rid}/{days[0]}..{days[3]}/1", f"{rid}/{days[4]}..{days[7]}/1"]
    runs = env.instance.get_runs(filters=dg.RunsFilter(tags={"backfill/request_id": rid}))
    assert len(runs) == 2 and {r.job_name for r in runs} == {CHUNK_JOB}
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    # Still one version, published on its own, per asset-day.
    assert [len(env.catalog.versions_of(RAW_ORDERS, d)) for d in days] == [1] * 8
    assert all(env.catalog.current(RAW_ORDERS, d).request_id == rid for d in days)
