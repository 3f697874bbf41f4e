"""The Launchpad's backfill_request and backfill_report jobs on a real instance: the same validation, dry run and
frozen request as `request create` (both adapters of the service), and the plan and report as Markdown metadata
the UI shows."""

from __future__ import annotations

import dagster as dg
import pytest
import yaml

from backfill_assets import backfills_for_instance
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.request_input import parse_conf_text
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration import instance_template
from backfill_assets.integration.request_jobs import (
    CLEAR_JOB,
    CLEAR_OP,
    REPORT_JOB,
    REPORT_OP,
    REQUEST_JOB,
    REQUEST_OP,
)
from backfill_assets.service import ClearInput, RequestInput
from tests.homes import shipped_storage
from tests.orders import DEFS, run_partitions

DAYS = ["2022-09-02", "2022-09-03"]


def launch(env, job_name: str, op: str, config: dict) -> dg.ExecuteInProcessResult:
    job = DEFS.resolve_job_def(job_name)
    return job.execute_in_process(
        run_config={"ops": {op: {"config": config}}}, instance=env.instance, raise_on_error=False
    )


def request(env, **config) -> dg.ExecuteInProcessResult:
    return launch(env, REQUEST_JOB, REQUEST_OP, {"assets": [ORDER_FACTS], "from_day": DAYS[0], "to_day": DAYS[1],
                                                 **config})


def output_metadata(result: dg.ExecuteInProcessResult, op: str) -> dict:
    [output] = [e for e in result.events_for_node(op) if e.is_successful_output]
    return {k: v.value for k, v in output.step_output_data.metadata.items()}


def test_a_dry_run_from_the_launchpad_shows_the_plan_and_writes_nothing(env):
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS]))
    result = request(env, reprocess="failed", dry_run=True)
    assert result.success
    metadata = output_metadata(result, REQUEST_OP)
    assert metadata["dry_run"] is True and metadata["cells"] == 2
    plan = metadata["plan"]
    assert plan.startswith("### Dry run: nothing was written")
    assert f"| {DAYS[0]} | {ORDER_FACTS} | skip | latest attempt PUBLISHED |" in plan
    assert Ledger(env.catalog).list() == []


def test_the_launchpad_names_the_run_queue_limit_that_holds_a_request_below_its_max_active(env, tmp_path):
    shipped = yaml.safe_load(instance_template.template_text())
    # A second Dagster instance with the shipped run queue, on the same catalog (DAGSTER_HOME stays env's).
    with dg.instance_for_test(temp_dir=str(tmp_path), set_dagster_home=False,
                              overrides={**shipped_storage(), "concurrency": shipped["concurrency"]}) as queued:
        result = DEFS.resolve_job_def(REQUEST_JOB).execute_in_process(
            run_config={"ops": {REQUEST_OP: {"config": {"assets": [ORDER_FACTS], "from_day": DAYS[0],
                                                        "to_day": DAYS[1], "max_active": 3, "dry_run": True}}}},
            instance=queued,
        )
    metadata = output_metadata(result, REQUEST_OP)
    assert (metadata["max_active"], metadata["effective_concurrency"]) == (3, 2)
    assert metadata["concurrency_bound_by"].startswith("tag limit backfill/team: 2 per distinct value")
    assert metadata["concurrency_raise_in"] == ("concurrency.runs.tag_concurrency_limits in the instance's "
                                                "dagster.yaml")
    assert "> max_active 3, but at most 2 run(s) of this request execute at once: bound by" in metadata["plan"]


def test_the_launchpad_defaults_to_the_declared_pace_and_refuses_a_contradiction_naming_the_asset(env):
    refused = request(env, assets=[CUSTOMER_SNAPSHOT], max_active=4)
    assert not refused.success
    [failure] = [e for e in refused.all_events if e.is_step_failure]
    message = failure.step_failure_data.user_failure_data.description
    assert message.startswith(f"max_active 4 is refused: {CUSTOMER_SNAPSHOT} depends on the past"), message
    assert Ledger(env.catalog).list() == []
    assert request(env, assets=[CUSTOMER_SNAPSHOT]).success
    [record] = Ledger(env.catalog).list()
    assert (record.spec.max_active, record.spec.order, record.spec.serial) == (1, "forward", True)


def test_a_request_from_the_launchpad_is_frozen_like_a_cli_request(env):
    result = request(env, max_active=1, reason="FX fix", requested_by="ana")
    assert result.success
    metadata = output_metadata(result, REQUEST_OP)
    [record] = Ledger(env.catalog).list()
    assert metadata["request_id"] == record.request_id
    assert (record.source, record.spec.max_active, record.spec.reason, record.spec.requested_by) == (
        "launchpad", 1, "FX fix", "ana"
    )
    assert record.spec.partitions == tuple(DAYS)
    assert metadata["runs"] == f"/runs?q%5B0%5D=tag%3A{T.REQUEST_ID}%3D{record.request_id}&view=runs"
    run = env.instance.get_run_by_id(result.run_id)
    assert run.tags[T.REPORT_OF] == record.request_id
    assert f"Created {record.request_id}" in metadata["plan"]

    report = launch(env, REPORT_JOB, REPORT_OP, {"request_id": record.request_id})
    assert report.success
    shown = output_metadata(report, REPORT_OP)
    assert shown["request_id"] == record.request_id and shown["complete"] is False
    assert shown["report"].startswith(f"### Request {record.request_id}: open (not complete)")
    assert f"| {DAYS[0]} | {ORDER_FACTS} | pending |" in shown["report"]


@pytest.mark.parametrize(
    "config",
    [
        {"assets": ["no_such_asset"]},
        {"from_day": "2022-13-01"},
        {"to_day": "2099-01-01"},
        {"reprocess": "everything"},
        {"max_active": 0},
        {"conf": "{not json"},
        {"conf": '{"order_facts": {"usd_to_cny": "eight"}}'},
        {"conf": '{"order_facts": {"usd_rate": 8.0}}'},
        {"allow_side_effects": [ORDER_FACTS], "approved_by": "lead"},
        {"partitions_per_run": 0},
        {"partitions_per_run": "abc"},
        {"partitions_per_run": 367},
    ],
)
def test_bad_input_fails_the_run_with_the_services_message_and_writes_nothing(env, config):
    """The Launchpad's config keys are the service's field names: its failure is word for word what a Python
    caller of the service gets."""
    fields = {"assets": [ORDER_FACTS], "from_day": DAYS[0], "to_day": DAYS[1], **config}
    with pytest.raises(InvalidInput) as service_error:
        conf = parse_conf_text(fields.pop("conf", None))
        backfills_for_instance(DEFS, env.instance, env.catalog).spec(RequestInput(**fields, conf=conf))

    result = request(env, **config)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data.description == str(service_error.value)
    assert Ledger(env.catalog).list() == []


@pytest.mark.parametrize("per_run, k, mode", [(None, 10, "auto: 20 intervals over 2 run slot(s), up to 10 per run"),
                                               ("auto", 10, "auto"), (5, 5, "explicit"), ("5", 5, "explicit")])
def test_the_launchpad_takes_partitions_per_run_auto_or_k_and_shows_the_chunking(env, per_run, k, mode):
    config = {"from_day": "2022-09-01", "to_day": "2022-09-20", "dry_run": True}
    result = request(env, **config, **({} if per_run is None else {"partitions_per_run": per_run}))
    assert result.success
    metadata = output_metadata(result, REQUEST_OP)
    assert metadata["partitions_per_run"] == k and metadata["partitions_per_run_mode"].startswith(mode)
    assert metadata["planned_runs"] == 20 // k
    assert f"> partitions per run: {k} ({metadata['partitions_per_run_mode']})" in metadata["plan"]
    if k == 10:
        assert "> 2 run(s): 2022-09-01..2022-09-10, 2022-09-11..2022-09-20" in metadata["plan"]
    assert Ledger(env.catalog).list() == []


def test_a_report_of_an_unknown_request_fails_clearly(env):
    result = launch(env, REPORT_JOB, REPORT_OP, {"request_id": "req-20221101-00000000"})
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert "req-20221101-00000000" in failure.step_failure_data.user_failure_data.description


def clear(env, **config) -> dg.ExecuteInProcessResult:
    return launch(env, CLEAR_JOB, CLEAR_OP, config)


def test_a_clear_from_the_launchpad_is_a_dry_run_until_asked_and_then_the_same_request_as_from_python(env):
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS]))
    dry = clear(env, select=f"+{ORDER_FACTS}", partition_key=DAYS[1], past=True)
    assert dry.success
    shown = output_metadata(dry, CLEAR_OP)
    # Every cell of the selection over the days, re-run whatever its state (reprocess completed).
    assert shown["dry_run"] is True and shown["selected_assets"] == f"{RAW_ORDERS}, {ORDER_FACTS}"
    assert shown["days_asked"] == f"{DAYS[1]} and every earlier day" and shown["cells"] == 2 * 3
    assert f"| {DAYS[0]} | {ORDER_FACTS} | create |" in shown["plan"]
    assert Ledger(env.catalog).list() == []

    created = clear(env, select=f"+{ORDER_FACTS}", partition_key=DAYS[1], past=True, dry_run=False,
                    reason="FX fix", requested_by="ana")
    assert created.success
    [record] = Ledger(env.catalog).list()
    assert output_metadata(created, CLEAR_OP)["request_id"] == record.request_id
    assert (record.source, record.spec.reason, record.spec.requested_by, record.spec.reprocess) == (
        "launchpad", "FX fix", "ana", "completed")
    # The Python caller's clear of the same input freezes the same cells.
    python = backfills_for_instance(DEFS, env.instance, env.catalog).clear(
        ClearInput(select=f"+{ORDER_FACTS}", partition_key=DAYS[1], past=True, reason="FX fix", requested_by="ana"),
        dry_run=True,
    )
    assert [(c.partition_key, c.asset) for c in python.plan.cells] == [
        (c.partition_key, c.asset) for c in backfills_for_instance(DEFS, env.instance, env.catalog).show(
            record.request_id).cells]


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"select": "key:nope", "partition_key": DAYS[0]}, "select 'key:nope' selects no asset"),
        ({"select": ORDER_FACTS, "past": True}, "past and future extend partition_key; give partition_key"),
        ({"select": ORDER_FACTS, "partition_key": DAYS[0], "from_day": DAYS[0]}, "not both"),
        ({"select": ORDER_FACTS, "partition_key": "../2022-09-02"}, "partition_key"),
        ({"select": ORDER_FACTS, "partition_key": DAYS[0], "max_active": 0}, "max_active 0 must be between"),
    ],
    ids=["selects-nothing", "past-without-day", "both-ways", "hostile-day", "max-active"],
)
def test_a_bad_clear_fails_its_run_with_the_services_words_and_writes_nothing(env, config: dict, words: str):
    result = clear(env, dry_run=False, **config)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    message = failure.step_failure_data.user_failure_data.description
    assert words in message, message
    with pytest.raises(InvalidInput) as python:  # the Python caller gets the same message
        backfills_for_instance(DEFS, env.instance, env.catalog).clear(ClearInput(**config))
    assert str(python.value) == message
    assert Ledger(env.catalog).list() == []
