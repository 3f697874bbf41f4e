"""A depends-on-past asset batched: its consecutive days in ONE chunk run, walked in order, each day gated alone and
reading the previous day published a moment before in the same run; the walk stops at the first day that does
not publish (Airflow's depends_on_past), and the later days end skipped, naming their previous day."""

from __future__ import annotations

import json

import dagster as dg
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.assets.chunks import CHUNK_JOB, op_name
from tests.driver_harness import drive
from tests.orders import DEFS, run_partitions

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05"]  # the seeded days; 09-01 is first


def _create(*args: str) -> str:
    result = CliRunner().invoke(cli, ["request", "create", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["request_id"]


def _chain_request(env, *extra: str) -> str:
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS]))
    return _create("--assets", CUSTOMER_SNAPSHOT, "--from", DAYS[0], "--to", DAYS[-1], *extra)  # serial: max_active 1


def _runs(env, rid: str) -> list[dg.DagsterRun]:
    return env.instance.get_runs(filters=dg.RunsFilter(tags={"backfill/request_id": rid}))


def test_the_chunk_job_has_an_op_for_the_depends_on_past_asset_after_its_upstream():
    job = DEFS.resolve_job_def(CHUNK_JOB)
    node = job.graph.node_named(op_name(CUSTOMER_SNAPSHOT))
    assert [i.name for i in node.definition.input_defs] == [f"after_{ORDER_FACTS}"]
    upstream = job.graph.dependency_structure.input_to_upstream_outputs_for_node(op_name(CUSTOMER_SNAPSHOT))
    assert {o.node_name for outputs in upstream.values() for o in outputs} == {op_name(ORDER_FACTS)}


def test_a_chain_runs_as_one_chunk_run_each_day_reading_the_day_before_published_in_the_same_run(env):
    rid = _chain_request(env)
    assert Ledger(env.catalog).get(rid).spec.partitions_per_run == len(DAYS)  # auto: the whole chain
    submitted = drive(env, rid)
    assert [(p, a, k) for p, a, k in submitted] == [(DAYS[0], (CUSTOMER_SNAPSHOT,), f"{rid}/{DAYS[0]}..{DAYS[-1]}/1")]
    [run] = _runs(env, rid)
    assert run.job_name == CHUNK_JOB and run.status == dg.DagsterRunStatus.SUCCESS
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    assert {c.decision for c in Ledger(env.catalog).cells(rid)} == {M.PUBLISHED}
    published = [env.catalog.current(CUSTOMER_SNAPSHOT, d) for d in DAYS]
    assert all(v.request_id == rid and v.dagster_run_id == run.run_id for v in published)
    assert published[0].input_versions.get(f"{CUSTOMER_SNAPSHOT}/2022-08-31") is None  # the calendar's first day
    for day, before, version in zip(DAYS[1:], published[:-1], published[1:], strict=True):
        # `previous` is the version of the day before that this very run had just published.
        assert version.input_versions[f"{CUSTOMER_SNAPSHOT}/{before.partition_key}"] == before.version_id, day
    log = [row for row in env.catalog.log_after(0) if row["asset"] == CUSTOMER_SNAPSHOT]
    assert [row["partition_key"] for row in log] == DAYS  # published in order


def test_a_rejected_middle_day_stops_the_chain_and_the_later_days_keep_their_previous_versions(env):
    first = _chain_request(env)
    drive(env, first)
    serving = {d: env.catalog.current(CUSTOMER_SNAPSHOT, d).version_id for d in DAYS}
    conf = json.dumps({CUSTOMER_SNAPSHOT: {"defect_days": {DAYS[2]: "drop_rows"}}})
    rid = _create("--assets", CUSTOMER_SNAPSHOT, "--from", DAYS[0], "--to", DAYS[-1], "--reprocess", "completed",
                  "--conf", conf)
    submitted = drive(env, rid)
    assert len(submitted) == 1  # one chunk run; nothing resubmitted after it
    [run] = _runs(env, rid)
    assert run.job_name == CHUNK_JOB and run.status == dg.DagsterRunStatus.FAILURE
    cells = {c.partition_key: c for c in Ledger(env.catalog).cells(rid)}
    assert [cells[d].decision for d in DAYS] == [M.PUBLISHED, M.PUBLISHED, M.REJECTED, M.SKIPPED, M.SKIPPED]
    assert cells[DAYS[3]].reason == f"previous interval {DAYS[2]} not published (depends on past)"
    assert cells[DAYS[4]].reason == f"previous interval {DAYS[3]} not published (depends on past)"
    # The later days were not attempted: no version of this run, and the earlier request's versions serve.
    for day in DAYS[3:]:
        assert [v.request_id for v in env.catalog.versions_of(CUSTOMER_SNAPSHOT, day)] == [first]
        assert env.catalog.current(CUSTOMER_SNAPSHOT, day).version_id == serving[day]
    assert env.catalog.current(CUSTOMER_SNAPSHOT, DAYS[2]).version_id == serving[DAYS[2]]
    assert env.catalog.current(CUSTOMER_SNAPSHOT, DAYS[1]).request_id == rid
    failure = [e for e in env.instance.all_logs(run.run_id) if e.is_dagster_event and e.dagster_event.is_step_failure]
    message = failure[0].dagster_event.step_failure_data.error.message
    assert f"{CUSTOMER_SNAPSHOT} {DAYS[2]} REJECTED" in message
    assert f"{CUSTOMER_SNAPSHOT} {DAYS[3]} not attempted (previous day {DAYS[2]} not published)" in message
    warnings = [e.message for e in env.instance.all_logs(run.run_id) if "not attempted" in (e.message or "")]
    assert any(f"{DAYS[3]}..{DAYS[4]}: not attempted — previous day {DAYS[2]} not published" in w for w in warnings)


def test_partitions_per_run_1_keeps_one_run_per_day_of_a_chain(env):
    rid = _chain_request(env, "--partitions-per-run", "1")
    submitted = drive(env, rid)
    assert [p for p, _, _ in submitted] == DAYS
    assert {r.job_name for r in _runs(env, rid)} != {CHUNK_JOB}
    assert {c.decision for c in Ledger(env.catalog).cells(rid)} == {M.PUBLISHED}


def test_a_chain_downstream_of_batched_assets_waits_for_the_days_it_reads(env):
    rid = _create("--assets", f"{RAW_ORDERS},{ORDER_FACTS},{CUSTOMER_SNAPSHOT}", "--from", DAYS[0], "--to",
                  DAYS[-1], "--partitions-per-run", "3")
    submitted = drive(env, rid)
    labels = [k.split("/")[1] for _, _, k in submitted]
    assets = [a for _, a, _ in submitted]
    # max_active is 1 (a depends-on-past asset is selected): the batch runs first, then the chain, each of its
    # runs after the days it reads have published.
    assert labels == [f"{DAYS[0]}..{DAYS[2]}", f"{DAYS[3]}..{DAYS[4]}"] * 2
    assert assets == [(RAW_ORDERS, ORDER_FACTS)] * 2 + [(CUSTOMER_SNAPSHOT,)] * 2
    assert {c.decision for c in Ledger(env.catalog).cells(rid)} == {M.PUBLISHED}
    for day in DAYS:
        snapshot = env.catalog.current(CUSTOMER_SNAPSHOT, day)
        assert snapshot.input_versions[f"{ORDER_FACTS}/{day}"] == env.catalog.current(ORDER_FACTS, day).version_id
