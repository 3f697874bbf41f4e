"""The operations' Launchpad jobs (``integration/operation_jobs.py``) on a real instance: each calls the service as
its CLI command does, names the UI's user as who acted, shows the result as run metadata, and a bad value fails
the run with the service's message and writes nothing. Every Launchpad job, the request jobs too, fails a bad
value with one line naming its config key."""

from __future__ import annotations

import re

import dagster as dg
import pytest
import sqlalchemy as sa

from backfill_assets import backfills_for_instance
from backfill_assets.engine.store import schema
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.operation_jobs import OPERATIONS
from backfill_assets.integration.request_jobs import CLEAR_JOB, REPORT_JOB, REQUEST_JOB
from backfill_assets.service import RequestInput
from tests.orders import DEFS, run_partitions

DAY = "2022-09-02"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
USER = "ana@example.com"


def op_of(job: str) -> str:
    """A Launchpad job's one op (``<job>_op``, or the request jobs' own names)."""
    [node] = DEFS.resolve_job_def(job).graph.node_defs
    return node.name


def launch(env, job: str, config: dict) -> dg.ExecuteInProcessResult:
    return DEFS.resolve_job_def(job).execute_in_process(
        run_config={"ops": {op_of(job): {"config": config}}}, instance=env.instance, raise_on_error=False,
        tags={"dagster/user": USER},
    )


def result_of(run: dg.ExecuteInProcessResult, job: str) -> tuple[str, object]:
    assert run.success, [e.message for e in run.all_events if e.is_failure]
    [output] = [e for e in run.events_for_node(op_of(job)) if e.is_successful_output]
    metadata = output.step_output_data.metadata
    return metadata["summary"].value, metadata["result"].value


def catalog_rows(env) -> dict[str, list]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(t)).all()), key=repr)
                for t in schema.metadata.sorted_tables}


def test_every_operation_has_a_job_in_the_code_location():
    assert {o.job for o in OPERATIONS} <= {j.name for j in DEFS.resolve_all_job_defs()}
    assert {o.job for o in OPERATIONS} == {
        "backfill_cancel", "backfill_pause", "backfill_resume", "backfill_confirm", "backfill_rollback",
        "backfill_accept", "backfill_reject", "backfill_register", "backfill_skip", "backfill_handoff", "backfill_gc",
        "backfill_list",
    }


def test_rollback_reject_skip_gc_and_list_run_from_the_launchpad(env):
    [first] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    [second] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    summary, rolled = result_of(launch(env, "backfill_rollback", {"asset": ORDER_FACTS, "partition_key": DAY,
                                                                   "reason": "bad fx table"}), "backfill_rollback")
    assert (rolled["taken_off"], rolled["serving"]) == (f"{ORDER_FACTS}/{DAY}/{second.run_id}/1",
                                                        f"{ORDER_FACTS}/{DAY}/{first.run_id}/1")
    assert summary.startswith("rolled back ")

    _, rejected = result_of(launch(env, "backfill_reject", {"asset": DAILY_REVENUE, "partition_key": DAY,
                                                             "reason": "stale FX"}), "backfill_reject")
    assert rejected["override"]["by"] == USER  # nobody named: the UI's user acted
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == rejected["serving"]

    _, marks = result_of(launch(env, "backfill_skip", {"asset": RAW_ORDERS, "from_day": "2022-09-03",
                                                        "to_day": "2022-09-04", "reason": "source outage"}),
                         "backfill_skip")
    assert [c["partition_key"] for c in marks["cells"]] == ["2022-09-03", "2022-09-04"]

    _, purgeable = result_of(launch(env, "backfill_gc", {"older_than_days": 0}), "backfill_gc")
    assert isinstance(purgeable, list)  # dry run by default: nothing removed
    backfills_for_instance(DEFS, env.instance, env.catalog).create(
        RequestInput(assets=[RAW_ORDERS], from_day="2022-09-05", to_day="2022-09-05", requested_by="ana"))
    _, listed = result_of(launch(env, "backfill_list", {}), "backfill_list")
    assert [r["source"] for r in listed] == ["python"]


# One bad value for every Launchpad job, and the config key its one-line failure names.
BAD_VALUES = [
    ("backfill_cancel", {"request_id": "../x"}, "request_id"),
    ("backfill_pause", {"request_id": "req-20221101-00000000", "by": "   "}, "by"),
    ("backfill_resume", {"request_id": "../x"}, "request_id"),
    ("backfill_confirm", {"request_id": "../x"}, "request_id"),
    ("backfill_rollback", {"asset": ORDER_FACTS, "partition_key": DAY, "reason": "   "}, "reason"),
    ("backfill_accept", {"version_id": f"{ORDER_FACTS}/{DAY}/run/1", "approved_by": "  ", "reason": "x"},
     "approved_by"),
    ("backfill_register", {"asset": ORDER_FACTS, "partition_key": DAY, "path": "/no/such.parquet",
                           "approved_by": "lead", "reason": "x"}, "path"),
    ("backfill_reject", {"asset": ORDER_FACTS, "partition_key": DAY, "reason": "   "}, "reason"),
    ("backfill_skip", {"asset": RAW_ORDERS, "reason": "x"}, "partition_key"),
    ("backfill_handoff", {"handoff_id": "ho-00000000", "decision": "maybe"}, "decision"),
    ("backfill_gc", {"older_than_days": -1}, "older_than_days"),
    ("backfill_list", {"status": ["nonsense"]}, "status"),
    (REQUEST_JOB, {"assets": [ORDER_FACTS], "from_day": DAY, "to_day": "2099-01-01"}, "to_day"),
    (CLEAR_JOB, {"select": ORDER_FACTS, "partition_key": "2099-01-01", "dry_run": False}, "partition_key"),
    (REPORT_JOB, {"request_id": "../x"}, "request_id"),
]


def test_every_launchpad_job_has_a_bad_value_case():
    assert {job for job, _, _ in BAD_VALUES} == {o.job for o in OPERATIONS} | {REQUEST_JOB, CLEAR_JOB, REPORT_JOB}


def failure_of(run: dg.ExecuteInProcessResult) -> str:
    """The run's one step failure, as the job's ``dg.Failure`` described it (not a traceback)."""
    assert not run.success
    [failure] = [e for e in run.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data is not None, failure.step_failure_data.error
    return failure.step_failure_data.user_failure_data.description


@pytest.mark.parametrize("job, config, key", BAD_VALUES, ids=[job for job, _, _ in BAD_VALUES])
def test_a_bad_value_fails_the_run_naming_the_config_key_and_writes_nothing(env, job, config, key):
    before = catalog_rows(env)
    message = failure_of(launch(env, job, config))
    assert "\n" not in message and re.search(rf"(?<![\w/]){key}(?![\w/])", message), message
    assert catalog_rows(env) == before


# Refusals that name no config key (an unknown name, a hostile key): one line all the same, the service's words.
@pytest.mark.parametrize("job, config, message", [
    ("backfill_rollback", {"asset": "no_such_asset", "partition_key": DAY, "reason": "x"}, "unknown asset"),
    ("backfill_rollback", {"asset": ORDER_FACTS, "partition_key": "../../etc", "reason": "x"}, "partition key"),
    ("backfill_cancel", {"request_id": "req-20221101-00000000"}, "unknown request"),
    ("backfill_accept", {"version_id": "nope", "approved_by": "lead", "reason": "x"}, "version id 'nope' is not"),
])
def test_a_refusal_fails_the_run_with_the_services_message_and_writes_nothing(env, job, config, message):
    before = catalog_rows(env)
    assert message in failure_of(launch(env, job, config))
    assert catalog_rows(env) == before
