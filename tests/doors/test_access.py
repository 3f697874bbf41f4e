"""Who may approve and decide, on a real instance, through every door of a code location with an access policy
(tests/access_location.py: one approver, one admin, retention 0 days): the CLI, the Launchpad's jobs run in
process, and runs launched with tags (a Dagster backfill's, a plain ``dagster job launch``'s). A stranger is refused
with the names allowed and nothing changes; an approver goes through, and who the system saw is stored beside the
stated name. The ``backfill_cleanup`` sensor, evaluated against the instance, reclaims rejected and superseded
versions past the retention."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.adoption import adopted_spec
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.admissions import Admissions
from backfill_assets.engine.store.handoffs import Handoffs
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.operations import Operations
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.graphs import graph_of
from backfill_assets.integration.launching_user import NOT_RECORDED, UI_WITHOUT_LOGIN, launching_user
from backfill_assets.integration.operation_jobs import op_name
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.runs import local_runs
from backfill_assets.integration.sensors.cleanup import GC_ACTOR, GC_SENSOR
from backfill_assets.service.context import os_user
from tests.access_location import ADMIN, APPROVER, STRANGER
from tests.access_location import defs as ACCESS_DEFS
from tests.orders import DEFS

DAY = "2022-09-02"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
REFUSED_APPROVER = "may not approve"
FROM_UI = {"dagster/from_ui": "true"}


def run(env, assets, tags=None, day=DAY):
    return local_runs.run_partitions(env.instance, [day], defs=ACCESS_DEFS, assets=assets, tags=tags)


def catalog_rows(env) -> dict[str, list]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(t)).all()), key=repr)
                for t in schema.metadata.sorted_tables}


@pytest.fixture
def cli_env(env, monkeypatch):
    monkeypatch.setenv("BACKFILL_MODULE", "tests.access_location")
    return env


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


# ---- the CLI ----------------------------------------------------------------------------------------------------

def test_cli_side_effects_need_a_listed_approver_and_the_os_user_is_recorded(cli_env):
    before = catalog_rows(cli_env)
    asked = ["request", "create", "--assets", REVENUE_ALERT, "--from", DAY, "--to", DAY,
             "--allow-side-effects", REVENUE_ALERT, "--json"]
    refused = invoke(*asked, "--approved-by", STRANGER)
    assert refused.exit_code == 2
    assert f"'{STRANGER}' may not approve side effects ({REVENUE_ALERT}): approvers are {APPROVER}; admins: " \
           f"{ADMIN}; nothing changed" in refused.output
    assert catalog_rows(cli_env) == before

    created = invoke(*asked, "--approved-by", APPROVER, "--requested-by", "someone else")
    assert created.exit_code == 0, created.output
    request_id = json.loads(created.output)["request_id"]
    shown = json.loads(invoke("request", "show", request_id, "--json").output)
    assert (shown["approved_by"], shown["requested_by"], shown["system_user"]) == (APPROVER, "someone else",
                                                                                   os_user())
    report = invoke("reconcile", request_id, "--json")
    assert json.loads(report.output)["request"]["system_user"] == os_user()
    human = invoke("reconcile", request_id).output
    assert f"requested by someone else; side effects approved by {APPROVER}; system user {os_user()}" in human


def test_cli_overrides_need_a_listed_approver(cli_env):
    [first] = run(cli_env, PIPELINE)
    [second] = run(cli_env, PIPELINE)
    serving = cli_env.catalog.current(DAILY_REVENUE, DAY).version_id
    before = catalog_rows(cli_env)
    reject = invoke("reject", DAILY_REVENUE, DAY, "--by", STRANGER, "--reason", "looks wrong")
    accept = invoke("accept", serving, "--approved-by", STRANGER, "--reason", "fine by me")
    for refused, what in ((reject, f"rejecting {DAILY_REVENUE} {DAY}"), (accept, f"accepting {serving}")):
        assert refused.exit_code == 2 and f"'{STRANGER}' may not approve {what}: approvers are" in refused.output
    assert catalog_rows(cli_env) == before

    done = invoke("reject", DAILY_REVENUE, DAY, "--by", ADMIN, "--reason", "stale FX", "--json")
    assert done.exit_code == 0, done.output
    override = json.loads(done.output)["override"]
    assert (override["by"], override["system_user"]) == (ADMIN, os_user())
    assert cli_env.catalog.current(DAILY_REVENUE, DAY).dagster_run_id == first.run_id != second.run_id


def test_cli_handoff_decisions_by_owners_or_admins_only(cli_env):
    handoffs = Handoffs(cli_env.catalog)
    handoff_id = handoffs.offer("req-20221101-00000001", DAILY_REVENUE, "team:finance", [DAY], utc_now(),
                                timedelta(hours=1))
    refused = invoke("handoff", "accept", handoff_id, "--by", APPROVER)
    assert refused.exit_code == 2
    assert (f"'{APPROVER}' may not decide handoff {handoff_id}: only {DAILY_REVENUE}'s owners or an admin may "
            f"(team:finance; admins: {ADMIN}); nothing changed") in refused.output
    assert handoffs.get(handoff_id).status == "open"
    declined = invoke("handoff", "decline", handoff_id, "--by", ADMIN, "--json")
    assert declined.exit_code == 0, declined.output
    assert {k: json.loads(declined.output)[k] for k in ("status", "decided_by", "system_user")} == {
        "status": "declined", "decided_by": ADMIN, "system_user": os_user()}


def offer_handoff(env) -> str:
    return Handoffs(env.catalog).offer("req-20221101-00000001", DAILY_REVENUE, "team:finance", [DAY], utc_now(),
                                       timedelta(hours=1))


# ---- the Launchpad ----------------------------------------------------------------------------------------------

def launch(env, job: str, op: str, config: dict, tags: dict | None = None) -> dg.ExecuteInProcessResult:
    return ACCESS_DEFS.resolve_job_def(job).execute_in_process(
        run_config={"ops": {op: {"config": config}}}, instance=env.instance, raise_on_error=False,
        tags={**FROM_UI, **(tags or {})},
    )


def failure_of(result: dg.ExecuteInProcessResult) -> str:
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


def test_launchpad_request_and_overrides_need_a_listed_approver(env):
    run(env, PIPELINE)
    run(env, PIPELINE)
    before = catalog_rows(env)
    request = {"assets": [REVENUE_ALERT], "from_day": DAY, "to_day": DAY, "allow_side_effects": [REVENUE_ALERT],
               "dry_run": False}
    refused = launch(env, REQUEST_JOB, REQUEST_OP, {**request, "approved_by": STRANGER})
    assert f"'{STRANGER}' may not approve side effects ({REVENUE_ALERT})" in failure_of(refused)
    reject = {"asset": DAILY_REVENUE, "partition_key": DAY, "reason": "stale FX"}
    refused = launch(env, "backfill_reject", op_name("backfill_reject"), {**reject, "by": STRANGER})
    assert f"'{STRANGER}' may not approve rejecting {DAILY_REVENUE} {DAY}" in failure_of(refused)
    # Nobody named: the UI's user acts, and Dagster OSS names nobody ("launchpad"), who is no approver either.
    refused = launch(env, "backfill_reject", op_name("backfill_reject"), reject)
    assert "'launchpad' may not approve" in failure_of(refused)
    assert catalog_rows(env) == before

    created = launch(env, REQUEST_JOB, REQUEST_OP, {**request, "approved_by": APPROVER})
    assert created.success
    [made] = Ledger(env.catalog).list()
    assert (made.spec.approved_by, made.spec.system_user) == (APPROVER, UI_WITHOUT_LOGIN)
    done = launch(env, "backfill_reject", op_name("backfill_reject"), {**reject, "by": APPROVER})
    assert done.success
    [override] = env.catalog.overrides_of_cell(DAILY_REVENUE, DAY)
    assert (override.decided_by, override.system_user) == (APPROVER, UI_WITHOUT_LOGIN)


def test_launchpad_handoff_decision_by_owner_only_and_the_launching_user_recorded(env):
    handoff_id = offer_handoff(env)
    decide = {"handoff_id": handoff_id, "decision": "accept"}
    refused = launch(env, "backfill_handoff", op_name("backfill_handoff"), {**decide, "by": STRANGER})
    assert f"only {DAILY_REVENUE}'s owners or an admin may (team:finance; admins: {ADMIN})" in failure_of(refused)
    assert Handoffs(env.catalog).get(handoff_id).status == "open"
    # A deployment that authenticates users (Dagster+, or a proxy adding the tag) names who launched the run.
    done = launch(env, "backfill_handoff", op_name("backfill_handoff"), {**decide, "by": "team:finance"},
                  tags={"user": "fin@example.com"})
    assert done.success
    decided = Handoffs(env.catalog).get(handoff_id)
    assert (decided.status, decided.decided_by, decided.system_user) == (
        "accepted", "team:finance", "fin@example.com")


# ---- runs launched with tags --------------------------------------------------------------------------------------

def test_a_dagster_backfills_side_effect_approved_by_a_stranger_is_left_alone(env):
    assert all(r.success for r in run(env, PIPELINE))
    ui_backfill = {T.DAGSTER_BACKFILL: "uibackfl", T.LANE: "", T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT}
    [stranger] = run(env, [REVENUE_ALERT], tags={**ui_backfill, T.APPROVED_BY: STRANGER})
    assert stranger.success, stranger.failure
    assert deliveries(env.catalog, DAY, asset=REVENUE_ALERT) == []
    [(cell, skip)] = Admissions(env.catalog).skips_of_runs([stranger.run_id]).items()
    assert cell == (REVENUE_ALERT, DAY, stranger.run_id)
    assert skip.reason.startswith(f"side effect not authorized: '{STRANGER}' is not an approver ({APPROVER})")

    [approved] = run(env, [REVENUE_ALERT], tags={**ui_backfill, T.APPROVED_BY: APPROVER})
    assert approved.success and len(deliveries(env.catalog, DAY, asset=REVENUE_ALERT)) == 1


def test_a_launched_backfill_run_approved_by_a_stranger_fails_without_acting(env):
    """``dagster job launch`` with the backfill lane's tags: no Dagster backfill to report a skip to, so the step
    fails, saying why, and nothing is delivered."""
    assert all(r.success for r in run(env, PIPELINE))
    tags = {T.LANE: T.LANE_BACKFILL, T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: STRANGER}
    [launched] = run(env, [REVENUE_ALERT], tags=tags)
    assert not launched.success
    assert f"'{STRANGER}' is not an approver ({APPROVER})" in launched.failure
    assert deliveries(env.catalog, DAY, asset=REVENUE_ALERT) == []
    # The shipped code location lists no approvers: any stated name goes, as before.
    [open_run] = local_runs.run_partitions(env.instance, [DAY], defs=DEFS, assets=[REVENUE_ALERT], tags=tags)
    assert open_run.success and len(deliveries(env.catalog, DAY, asset=REVENUE_ALERT)) == 1


# ---- the gc sensor ----------------------------------------------------------------------------------------------

def test_the_gc_sensor_reclaims_rejected_and_superseded_versions_past_retention(env):
    runs = [r.run_id for r in run(env, [RAW_ORDERS]) + run(env, [RAW_ORDERS]) + run(env, [RAW_ORDERS])
            + run(env, [RAW_ORDERS])]
    service = backfills_for_instance(ACCESS_DEFS, env.instance, env.catalog, user=APPROVER)
    service.reject(RAW_ORDERS, DAY, APPROVER, "wrong source extract")
    versions = {v.dagster_run_id: v for v in env.catalog.versions_of(RAW_ORDERS, DAY)}
    assert [versions[r].state for r in runs] == ["SUPERSEDED", "SUPERSEDED", "PUBLISHED", "REJECTED"]
    files = {r: Path(versions[r].path) for r in runs}

    shipped = DEFS.resolve_sensor_def(GC_SENSOR)
    assert shipped.default_status == dg.DefaultSensorStatus.STOPPED
    kept = shipped(dg.build_sensor_context(instance=env.instance))  # the shipped 30 days: nothing is that old
    assert kept.skip_message.startswith("purged 0 version(s) older than 30 day(s)")

    sensor = ACCESS_DEFS.resolve_sensor_def(GC_SENSOR)
    result = sensor(dg.build_sensor_context(instance=env.instance))
    assert result.skip_message.startswith("purged 2 version(s) older than 0 day(s)")
    after = {v.dagster_run_id: v.state for v in env.catalog.versions_of(RAW_ORDERS, DAY)}
    # The current version and the one a rollback would restore stay; the others' files are gone, rows kept.
    assert [after[r] for r in runs] == ["PURGED", "SUPERSEDED", "PUBLISHED", "PURGED"]
    assert [files[r].exists() for r in runs] == [False, True, True, False]
    [trail] = [o for o in Operations(env.catalog).all() if o.operation == "gc"]
    assert (trail.actor, trail.outcome) == (GC_ACTOR, "purged 2 version(s)")
    again = sensor(dg.build_sensor_context(instance=env.instance))
    assert again.skip_message.startswith("purged 0 version(s)")


@pytest.mark.parametrize("tags, seen", [
    ({"user": "fin@example.com", "dagster/user": "x", **FROM_UI}, "fin@example.com"),  # Dagster+ names its users
    ({"dagster/user": "ops@example.com"}, "ops@example.com"),  # a wrapper or proxy that tags runs
    (FROM_UI, UI_WITHOUT_LOGIN),  # all that Dagster OSS's UI tags
    ({}, NOT_RECORDED),  # dagster job launch, the GraphQL API
])
def test_the_launching_user_is_what_dagster_recorded_or_says_how_it_was_launched(tags, seen):
    assert launching_user(tags) == seen
    spec = adopted_spec(graph_of(ACCESS_DEFS), ((RAW_ORDERS, DAY),), tags, tags.get("user"), 2, launching_user(tags))
    assert spec.system_user == seen
