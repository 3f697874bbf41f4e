"""One refusal, each door's words: the engine names the field as the Python API does (``to_version``,
``to_day``); the CLI says its flag (``--to``), the Launchpad its config key, Python its argument — and nothing
changes at any of them."""

from __future__ import annotations

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.operation_jobs import op_name
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.service import RequestInput
from tests.orders import DEFS, run_partitions

DAY, OTHER_DAY = "2022-09-02", "2022-09-03"


def _launchpad_failure(env, job: str, op: str, config: dict) -> str:
    run = DEFS.resolve_job_def(job).execute_in_process(
        run_config={"ops": {op: {"config": config}}}, instance=env.instance, raise_on_error=False,
    )
    assert not run.success
    [failure] = [e for e in run.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    return failure.step_failure_data.error.message if failure.step_failure_data.error else ""


def _cli_error(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    return result.output


def test_a_rollback_to_a_version_of_another_day_is_worded_by_each_door(env):
    assert all(r.success for r in run_partitions(env.instance, [DAY, OTHER_DAY], assets=[RAW_ORDERS, ORDER_FACTS]))
    other = env.catalog.current(ORDER_FACTS, OTHER_DAY).version_id
    serving = env.catalog.current(ORDER_FACTS, DAY).version_id
    refusal = f"{other} is not a version of {ORDER_FACTS} {DAY}"

    cli_words = _cli_error(["rollback", ORDER_FACTS, DAY, "--to", other, "--reason", "bad"])
    assert f"error: --to {refusal}" in cli_words
    job = "backfill_rollback"
    launchpad = _launchpad_failure(env, job, op_name(job), {"asset": ORDER_FACTS, "partition_key": DAY,
                                                             "reason": "bad", "to_version": other})
    assert f"to_version {refusal}" in launchpad
    with pytest.raises(InvalidField, match=f"^to_version {refusal}$") as raised:
        backfills_for_instance(DEFS, env.instance, env.catalog).rollback(ORDER_FACTS, DAY, "bad", to_version=other)
    assert raised.value.fields == ("to_version",)
    assert env.catalog.current(ORDER_FACTS, DAY).version_id == serving


def test_a_range_that_ends_before_it_starts_is_worded_by_each_door(env):
    refusal = "2022-09-01 is before {} 2022-09-05"
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    cli_words = _cli_error(["request", "create", "--assets", ORDER_FACTS, "--from", "2022-09-05", "--to",
                            "2022-09-01", "--reason", "x"])
    assert f"error: --to {refusal.format('--from')}" in cli_words
    launchpad = _launchpad_failure(env, REQUEST_JOB, REQUEST_OP, {
        "assets": [ORDER_FACTS], "from_day": "2022-09-05", "to_day": "2022-09-01", "reason": "x"})
    assert f"to_day {refusal.format('from_day')}" in launchpad
    with pytest.raises(InvalidField, match=f"^to_day {refusal.format('from_day')}$"):
        service.create(RequestInput(assets=[ORDER_FACTS], from_day="2022-09-05", to_day="2022-09-01"))
    assert service.list() == []


def test_a_malformed_handoff_id_is_worded_by_each_door(env):
    refusal = "'HO-1' is not of the form ho-xxxxxxxx"
    service = backfills_for_instance(DEFS, env.instance, env.catalog)

    cli_words = _cli_error(["handoff", "accept", "HO-1", "--by", "team:finance"])
    assert f"error: HANDOFF_ID {refusal}" in cli_words
    job = "backfill_handoff"
    launchpad = _launchpad_failure(env, job, op_name(job), {"handoff_id": "HO-1", "decision": "accept",
                                                             "by": "team:finance"})
    assert f"handoff_id {refusal}" in launchpad
    with pytest.raises(InvalidField, match=f"^handoff_id {refusal}$") as raised:
        service.accept_handoff("HO-1", "team:finance")
    assert raised.value.fields == ("handoff_id",)
    assert service.handoffs() == []
