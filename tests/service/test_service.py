"""The service (``backfill_assets.service.Backfills``) driven directly, as a Python caller does, on a real instance
and catalog: typed input (lists, enums, dates, parsed conf), frozen records out, the request's life cycle, and one
validation whose errors name fields that each surface words its own way."""

from __future__ import annotations

import json
from datetime import date

import pytest
from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.service import (
    Backfills,
    DownstreamPolicy,
    InvalidField,
    Order,
    RefusedField,
    ReprocessPolicy,
    RequestInput,
    RequestSource,
)
from tests.orders import DEFS, run_partitions

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]


@pytest.fixture
def backfills(env) -> Backfills:
    return backfills_for_instance(DEFS, env.instance, env.catalog)


def asked(**fields) -> RequestInput:
    return RequestInput(**{"assets": [RAW_ORDERS], "from_day": DAYS[0], "to_day": DAYS[-1], **fields})


def test_a_python_caller_creates_a_request_and_gets_the_frozen_spec_back(env, backfills):
    created = backfills.create(asked(
        assets=[ORDER_FACTS, RAW_ORDERS], from_day=date(2022, 9, 1), to_day=date(2022, 9, 3),
        reprocess=ReprocessPolicy.COMPLETED, order=Order.FORWARD, downstream=DownstreamPolicy.CASCADE,
        max_active=3, partitions_per_run=1, conf={"order_facts": {"usd_to_cny": 7.3}},
        reason="FX fix", requested_by="ana",
    ))
    request = created.request
    assert (request.source, request.status) == (RequestSource.PYTHON, "open")
    assert request.spec.assets == (RAW_ORDERS, ORDER_FACTS)  # in dependency order
    assert request.spec.partitions == tuple(DAYS)
    assert (request.spec.reprocess, request.spec.downstream, request.spec.max_active) == ("completed", "cascade", 3)
    assert request.spec.conf["order_facts"]["usd_to_cny"] == 7.3  # with the config's defaults filled in
    assert request.code_version == backfills.code_version()
    assert created.concurrency.effective <= 3

    [stored] = Ledger(env.catalog).list()
    assert stored.request_id == request.request_id and stored.source == "python"
    assert stored.spec.conf == request.spec.conf and stored.spec.requested_by == "ana"
    assert json.loads(json.dumps(created.as_dict(), default=str))["request_id"] == request.request_id


def test_the_dry_run_plans_each_cell_and_the_runs_and_writes_nothing(env, backfills):
    assert all(r.success for r in run_partitions(env.instance, DAYS[:1], assets=[RAW_ORDERS]))
    plan = backfills.plan(asked(reprocess="failed", partitions_per_run=2, max_active=1))
    assert [(c.partition_key, c.action) for c in plan.cells] == [(DAYS[0], "skip"), (DAYS[1], "create"),
                                                                  (DAYS[2], "create")]
    assert [(r.first, r.last, r.intervals) for r in plan.runs] == [(DAYS[1], DAYS[2], 2)]
    assert plan.notes()[1] == "partitions per run: 2 (explicit)"
    assert Ledger(env.catalog).list() == []


def test_show_list_progress_pause_resume_confirm_and_cancel_through_the_service(env, backfills):
    made = backfills.create(asked(confirm_cascade=True, downstream="cascade", requested_by="ana"))
    request_id = made.request.request_id
    assert [s.request.request_id for s in backfills.list()] == [request_id]
    detail = backfills.show(request_id)
    assert [c.partition_key for c in detail.cells] == DAYS and detail.counts["pending"] == 3

    paused = backfills.pause(request_id, by="ana", reason="warehouse maintenance")
    assert (paused.already_paused, paused.pause.status_before, paused.in_flight) == (False, "open", 0)
    assert backfills.pause(request_id, by="bo").already_paused  # the first pause's who and why stand
    assert backfills.progress(request_id).status == "paused"
    resumed = backfills.resume(request_id, by="ana")
    assert (resumed.status, resumed.pause.resumed_by) == ("open", "ana")

    assert backfills.confirm(request_id).confirmed_at is not None
    cancelled = backfills.cancel(request_id)
    assert (cancelled.already_cancelled, cancelled.terminated_runs) == (False, ())
    assert backfills.cancel(request_id).already_cancelled
    assert backfills.progress(request_id).status == "cancelled"


@pytest.mark.parametrize(
    "fields, named, message",
    [
        ({"to_day": "2099-01-01"}, ("to_day",), "to_day 2099-01-01 is past the newest complete interval"),
        ({"from_day": "2022-02-30"}, ("from_day",), "from_day '2022-02-30' is not a valid calendar date"),
        ({"max_active": 0}, ("max_active",), "max_active 0 must be between 1 and 64"),
        ({"reprocess": "everything"}, ("reprocess",), "reprocess 'everything' is not one of none, failed, completed"),
        ({"assets": "raw_orders"}, ("assets",), "assets must be a list of asset names, not 'raw_orders'"),
        ({"conf": ["not", "a", "mapping"]}, ("conf",), "conf must be an object (a mapping), not list"),
        ({"allow_side_effects": [REVENUE_ALERT]}, ("allow_side_effects", "approved_by"),
         "allow_side_effects needs approved_by (who approved the side effects)"),
        ({"requested_by": "ana\nrm -rf"}, ("requested_by",), "requested_by 'ana\\nrm -rf' must be 1-120 letters"),
    ],
)
def test_bad_input_is_an_invalid_field_naming_its_fields_and_writes_nothing(env, backfills, fields, named, message):
    with pytest.raises(InvalidField) as error:
        backfills.create(asked(**fields))
    assert error.value.fields == named
    assert str(error.value).startswith(message)
    assert Ledger(env.catalog).list() == []


def test_a_depends_on_past_asset_refuses_backward_order_naming_the_field(env, backfills):
    with pytest.raises(RefusedField) as error:
        backfills.plan(asked(assets=[CUSTOMER_SNAPSHOT], order="backward"))
    assert error.value.fields == ("order",)
    assert str(error.value) == (f"order backward is refused: {CUSTOMER_SNAPSHOT} depends on the past, so the "
                                "request runs forward; leave the order out to use it")


def test_a_serial_asset_defaults_to_one_day_at_a_time_and_refuses_more_naming_the_asset(env, backfills):
    """Order in the definition: the request takes what its assets declare, and refuses a contradiction."""
    planned = backfills.plan(asked(assets=[ORDER_FACTS, CUSTOMER_SNAPSHOT]))
    assert (planned.spec.max_active, planned.spec.order, planned.spec.serial) == (1, "forward", True)
    with pytest.raises(RefusedField) as error:
        backfills.plan(asked(assets=[ORDER_FACTS, CUSTOMER_SNAPSHOT], max_active=4))
    assert error.value.fields == ("max_active",)
    assert str(error.value).startswith(f"max_active 4 is refused: {CUSTOMER_SNAPSHOT} depends on the past")
    assert Ledger(env.catalog).list() == []


def test_each_surface_words_the_same_error_with_its_own_names_for_the_fields(env, backfills):
    """One validation: the Python caller reads ``to_day``, the CLI ``--to``, the Launchpad its config key."""
    with pytest.raises(InvalidField) as python:
        backfills.create(asked(to_day="2099-01-01"))
    cli_result = CliRunner().invoke(cli, ["request", "create", "--assets", RAW_ORDERS, "--from", DAYS[0],
                                          "--to", "2099-01-01"])
    assert cli_result.exit_code == 2
    assert cli_result.output.strip() == "error: " + str(python.value).replace("to_day", "--to", 1)
    launchpad = DEFS.resolve_job_def(REQUEST_JOB).execute_in_process(
        run_config={"ops": {REQUEST_OP: {"config": {"assets": [RAW_ORDERS], "from_day": DAYS[0],
                                                     "to_day": "2099-01-01"}}}},
        instance=env.instance, raise_on_error=False,
    )
    [failure] = [e for e in launchpad.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data.description == str(python.value)
    assert Ledger(env.catalog).list() == []


def test_every_door_leaves_the_same_operation_rows_but_for_its_surface(env, backfills):
    """The same pause from Python, the CLI and the Launchpad: the same trail (who, why, what came of it), each
    row naming the surface it came through."""
    ids = [backfills.create(asked(from_day=day, to_day=day, requested_by="ana")).request.request_id for day in DAYS]
    backfills.pause(ids[0], by="ana", reason="warehouse maintenance")
    paused = CliRunner().invoke(cli, ["request", "pause", ids[1], "--by", "ana", "--reason", "warehouse maintenance"])
    assert paused.exit_code == 0, paused.output
    launched = DEFS.resolve_job_def("backfill_pause").execute_in_process(
        run_config={"ops": {"backfill_pause_op": {"config": {"request_id": ids[2], "by": "ana",
                                                               "reason": "warehouse maintenance"}}}},
        instance=env.instance, raise_on_error=False,
    )
    assert launched.success
    trails = [backfills.show(request_id).operations for request_id in ids]
    said = [[(o.operation, o.actor, o.reason, o.outcome) for o in trail] for trail in trails]
    assert said[0] == said[1] == said[2]
    assert said[0][1] == ("pause", "ana", "warehouse maintenance", "paused (was open); 0 cell(s) in flight")
    assert [[o.surface for o in trail] for trail in trails] == [
        ["python", "python"], ["python", "cli"], ["python", "launchpad"]
    ]
    assert [o.target for o in backfills.operations()][:3] == [ids[2], ids[1], ids[0]]
