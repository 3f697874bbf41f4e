"""Downstream follows published versions: none / cascade / handoff, driven by the real driver and propagation."""

from __future__ import annotations

import json
import time

from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store.handoffs import Handoffs as HandoffStore
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS
from backfill_assets.integration.sensors.propagation import propagate_once
from backfill_assets.service.context import os_user
from tests.driver_harness import drive
from tests.instance_env import SEED_FROM, SEED_TO
from tests.orders import GRAPH, run_partitions

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05"]


def _production(env):
    runs = run_partitions(env.instance, DAYS, assets=list(GRAPH.data_assets))  # past days' alerts need an approver
    assert all(r.success for r in runs), [r.failure for r in runs]


def _create(*args: str) -> str:
    result = CliRunner().invoke(cli, ["request", "create", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["request_id"]


def _cells(env, request_id):
    return [(c.asset, c.partition_key, c.origin, c.decision) for c in Ledger(env.catalog).cells(request_id)]


def test_cascade_runs_affected_cells_in_dependency_and_partition_order(env):
    _production(env)
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-02", "--to", "2022-09-02",
                  "--reprocess", "completed", "--downstream", "cascade")
    submitted = drive(env, rid)
    # order_facts first; then daily_revenue and customer_snapshot of that day; then the snapshot's later days.
    assert [(p, a) for p, a, _ in submitted] == [
        ("2022-09-02", (ORDER_FACTS,)),
        ("2022-09-02", (DAILY_REVENUE, CUSTOMER_SNAPSHOT)),
        ("2022-09-03", (CUSTOMER_SNAPSHOT,)),
        ("2022-09-04", (CUSTOMER_SNAPSHOT,)),
        ("2022-09-05", (CUSTOMER_SNAPSHOT,)),
    ]
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    snapshot = env.catalog.current(CUSTOMER_SNAPSHOT, "2022-09-03")
    assert snapshot.request_id == rid
    assert snapshot.input_versions[f"{CUSTOMER_SNAPSHOT}/2022-09-02"] == env.catalog.current(
        CUSTOMER_SNAPSHOT, "2022-09-02").version_id


def test_cascade_never_launches_downstream_of_a_rejected_version(env):
    _production(env)
    conf = json.dumps({ORDER_FACTS: {"defect_days": {"2022-09-03": "duplicate_keys"}}})
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-03", "--to", "2022-09-03",
                  "--reprocess", "completed", "--downstream", "cascade", "--conf", conf)
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [("2022-09-03", (ORDER_FACTS,))]
    assert _cells(env, rid) == [(ORDER_FACTS, "2022-09-03", "planned", M.REJECTED)]


def test_policy_none_launches_nothing_and_reports_stale(env):
    _production(env)
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-04", "--to", "2022-09-04", "--reprocess", "completed")
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [("2022-09-04", (ORDER_FACTS,))]
    report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
    stale = {(s["asset"], s["partition_key"]) for s in report["stale_downstream"]}
    assert stale == {
        (DAILY_REVENUE, "2022-09-04"), (CUSTOMER_SNAPSHOT, "2022-09-04"), (CUSTOMER_SNAPSHOT, "2022-09-05")
    }


def test_confirm_cascade_waits_for_confirmation(env):
    _production(env)
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-05", "--to", "2022-09-05",
                  "--reprocess", "completed", "--downstream", "cascade", "--confirm-cascade")
    submitted = drive(env, rid, max_ticks=6)
    assert [(p, a) for p, a, _ in submitted] == [("2022-09-05", (ORDER_FACTS,))]
    record = Ledger(env.catalog).get(rid)
    assert record.status == M.OPEN and "request confirm" in record.row["message"]
    assert (DAILY_REVENUE, "2022-09-05", "cascade", M.PENDING) in _cells(env, rid)
    assert CliRunner().invoke(cli, ["request", "confirm", rid]).exit_code == 0
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [("2022-09-05", (DAILY_REVENUE, CUSTOMER_SNAPSHOT))]
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED


def test_handoff_accept_decline_and_expiry(env):
    _production(env)
    rid = _create("--assets", ORDER_FACTS, "--from", "2022-09-04", "--to", "2022-09-04",
                  "--reprocess", "completed", "--downstream", "handoff")
    drive(env, rid, max_ticks=4)
    handoffs = {h["asset"]: h for h in json.loads(CliRunner().invoke(cli, ["handoff", "list", "--json"]).output)}
    assert set(handoffs) == {DAILY_REVENUE, CUSTOMER_SNAPSHOT}
    lines = CliRunner().invoke(cli, ["handoff", "list"]).output.splitlines()
    assert f"{handoffs[DAILY_REVENUE]['handoff_id']}  open      {rid}  {DAILY_REVENUE} → team:finance  1 day(s)" in [
        line.split("  deadline")[0] for line in lines]
    assert handoffs[DAILY_REVENUE]["owner"] == "team:finance"
    assert handoffs[DAILY_REVENUE]["partitions"] == ["2022-09-04"]
    assert handoffs[CUSTOMER_SNAPSHOT]["partitions"] == ["2022-09-04", "2022-09-05"]
    assert Ledger(env.catalog).get(rid).status == M.OPEN, "open handoffs keep the request open"

    decline = ["handoff", "decline", handoffs[CUSTOMER_SNAPSHOT]["handoff_id"], "--by", "team:crm"]
    assert CliRunner().invoke(cli, decline).exit_code == 0
    # Only the asset's owners decide: anyone else is refused, naming who may, and the handoff stays open.
    refused = CliRunner().invoke(cli, ["handoff", "accept", handoffs[DAILY_REVENUE]["handoff_id"], "--by", "fin"])
    assert refused.exit_code == 2 and "only daily_revenue's owners or an admin may (team:finance)" in refused.output
    assert HandoffStore(env.catalog).get(handoffs[DAILY_REVENUE]["handoff_id"]).status == "open"
    accept = CliRunner().invoke(cli, ["handoff", "accept", handoffs[DAILY_REVENUE]["handoff_id"], "--by",
                                      "Team:Finance", "--json"])
    assert accept.exit_code == 0, accept.output
    decided = json.loads(accept.output)
    assert (decided["decided_by"], decided["system_user"]) == ("Team:Finance", os_user())
    submitted = drive(env, rid)
    assert [(p, a) for p, a, _ in submitted] == [("2022-09-04", (DAILY_REVENUE,))]
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    again = CliRunner().invoke(cli, ["handoff", "accept", handoffs[DAILY_REVENUE]["handoff_id"], "--by",
                                     "team:finance"])
    assert again.exit_code == 2 and "already accepted" in again.output

    # Expiry: a one-second window passes, the propagation sensor closes the handoff, the request completes.
    conf = json.dumps({"handoff_window_seconds": 1})
    rid2 = _create("--assets", ORDER_FACTS, "--from", "2022-09-05", "--to", "2022-09-05",
                   "--reprocess", "completed", "--downstream", "handoff", "--conf", conf)
    drive(env, rid2, max_ticks=3)
    time.sleep(1.2)
    propagate_once(GRAPH, env.catalog)
    drive(env, rid2, max_ticks=3)
    listed = CliRunner().invoke(cli, ["handoff", "list", "--request", rid2, "--json"]).output
    statuses = {h["status"] for h in json.loads(listed)}
    assert statuses == {"expired"}
    assert Ledger(env.catalog).get(rid2).status == M.COMPLETED


def test_production_publishes_do_not_propagate_and_propagation_is_idempotent(env):
    _production(env)
    first = propagate_once(GRAPH, env.catalog)
    assert first["rows"] > 0 and first["cascaded"] == 0 and first["handoffs"] == 0
    assert propagate_once(GRAPH, env.catalog)["rows"] == 0, "the cursor moved past what was processed"
    assert SEED_FROM <= DAYS[0] and DAYS[-1] <= SEED_TO


def test_a_ui_backfill_hands_off_and_the_driver_runs_what_the_owner_accepts(env):
    """`backfill/downstream=handoff` on a UI launch: its publish offers the downstream to its owners, as for a
    request made with the CLI; the accepted cells are the driver's to run (Dagster's backfill is over)."""
    from backfill_assets.engine.model import tags as T
    from backfill_assets.engine.plan.adoption import adopted_spec

    _production(env)
    day, launch = "2022-09-03", {T.DAGSTER_BACKFILL: "uihandof", T.LANE: "", T.DOWNSTREAM: "handoff"}
    spec = adopted_spec(GRAPH, ((ORDER_FACTS, day),), launch, "ui-user", default_max_active=2)
    rid = f"{T.ADOPTED_PREFIX}uihandof"
    Ledger(env.catalog).create(rid, spec, code_version(), excluded={}, source=M.RequestSource.DAGSTER)
    [run] = run_partitions(env.instance, [day], assets=[ORDER_FACTS], tags=launch)  # the backfill's run
    assert run.success, run.failure
    propagate_once(GRAPH, env.catalog)
    offered = {h.asset: h for h in HandoffStore(env.catalog).list(rid)}
    assert set(offered) == {DAILY_REVENUE, CUSTOMER_SNAPSHOT} and offered[DAILY_REVENUE].partitions == (day,)
    accept = ["handoff", "accept", offered[DAILY_REVENUE].handoff_id, "--by", "team:finance"]
    assert CliRunner().invoke(cli, accept).exit_code == 0
    # The driver runs only the accepted cell: the backfill's own cell is Dagster's.
    assert [(p, a) for p, a, _ in drive(env, rid, max_ticks=4)] == [(day, (DAILY_REVENUE,))]
    cells = {(asset, origin): decision for asset, _, origin, decision in _cells(env, rid)}
    assert cells[(DAILY_REVENUE, "handoff")] == M.PUBLISHED
    assert env.catalog.current(DAILY_REVENUE, day).request_id == rid
