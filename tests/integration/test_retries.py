"""An asset's own retries (``retry_policy=``): its step is tried as often as it declares, each try a new attempt of
the same logical run; a batched run's op of the asset takes the same policy; anything but a RetryPolicy is refused
when declared."""

from __future__ import annotations

import re

import dagster as dg
import pandas as pd
import pytest

from backfill_assets import (
    BusinessCalendar,
    InvalidInput,
    backfill_definitions,
    backfills_for_instance,
    gated_asset,
    side_effect_asset,
)
from backfill_assets.examples.orders.domain import ORDER_FACTS, REVENUE_ALERT
from backfill_assets.integration.assets.chunks import CHUNK_JOB, op_name
from tests.homes import fresh_home, shipped_storage
from tests.orders import DEFS as ORDERS_DEFS

CALENDAR = BusinessCalendar("Europe/Berlin", "2024-01-01")
DAY = "2024-03-31"
FAILURES_LEFT: dict[str, int] = {}


def _fail_first(asset: str) -> pd.DataFrame:
    if FAILURES_LEFT.get(asset, 0) > 0:
        FAILURES_LEFT[asset] -= 1
        raise ConnectionError(f"{asset}: the source dropped the connection")
    return pd.DataFrame({"n": [1]})


@gated_asset(calendar=CALENDAR, retry_policy=dg.RetryPolicy(max_retries=0))
def tried_once() -> pd.DataFrame:
    """Fails while FAILURES_LEFT says so; never tried again."""
    return _fail_first("tried_once")


@gated_asset(calendar=CALENDAR, retry_policy=dg.RetryPolicy(max_retries=3))
def tried_four_times() -> pd.DataFrame:
    """Fails while FAILURES_LEFT says so; tried up to three more times."""
    return _fail_first("tried_four_times")


@pytest.fixture
def retrying(tmp_path, monkeypatch):
    fresh_home(tmp_path, monkeypatch)
    defs = backfill_definitions(assets=[tried_once, tried_four_times])
    FAILURES_LEFT.clear()
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=shipped_storage()) as instance:
        yield defs, instance


def _attempts(defs: dg.Definitions, instance: dg.DagsterInstance, asset: str) -> list[tuple[int, str]]:
    return [(v.attempt_no, v.state) for v in backfills_for_instance(defs, instance).versions(asset, DAY)]


def _retries_asked(result: dg.ExecuteInProcessResult) -> int:
    return sum(1 for e in result.all_events if e.event_type_value == "STEP_UP_FOR_RETRY")


def test_an_asset_with_max_retries_0_fails_after_one_attempt(retrying):
    defs, instance = retrying
    FAILURES_LEFT["tried_once"] = 1
    result = dg.materialize([defs.resolve_assets_def("tried_once")], partition_key=DAY, instance=instance,
                            raise_on_error=False)
    assert not result.success and _retries_asked(result) == 0
    assert _attempts(defs, instance, "tried_once") == [(1, "ABANDONED")]


def test_an_asset_with_max_retries_3_publishes_its_third_attempt_after_two_failures(retrying):
    defs, instance = retrying
    FAILURES_LEFT["tried_four_times"] = 2
    result = dg.materialize([defs.resolve_assets_def("tried_four_times")], partition_key=DAY, instance=instance)
    assert result.success and _retries_asked(result) == 2
    assert _attempts(defs, instance, "tried_four_times") == [(1, "ABANDONED"), (2, "ABANDONED"), (3, "PUBLISHED")]
    backfills = backfills_for_instance(defs, instance)
    serving = backfills.serving("tried_four_times", DAY)
    assert serving.attempt_no == 3 and serving.dagster_run_id == result.run_id
    tries = backfills.tries("tried_four_times", DAY)
    # One logical run, three tries of it in one Dagster run.
    assert [(t.attempt_no, t.logical_run_id, t.dagster_run_id) for t in tries] == [
        (n, result.run_id, result.run_id) for n in (1, 2, 3)
    ]


def test_the_policy_is_passed_through_to_the_step_and_to_its_batched_op():
    policy = dg.RetryPolicy(max_retries=4, delay=0.5, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)

    @gated_asset(calendar=CALENDAR, retry_policy=policy)
    def patient() -> pd.DataFrame:
        """One row."""
        return pd.DataFrame({"n": [1]})

    defs = backfill_definitions(assets=[patient, tried_once])
    chunk = defs.resolve_job_def(CHUNK_JOB)
    assert defs.resolve_assets_def("patient").op.retry_policy == policy
    assert chunk.graph.node_named(op_name("patient")).definition.retry_policy == policy
    # max_retries=0: no policy at all, in the step and in the batched op.
    assert defs.resolve_assets_def("tried_once").op.retry_policy is None
    assert chunk.graph.node_named(op_name("tried_once")).definition.retry_policy is None


def test_without_a_retry_policy_a_gated_step_keeps_two_retries_a_second_apart():
    facts = ORDERS_DEFS.resolve_assets_def(dg.AssetKey(ORDER_FACTS))
    assert facts.op.retry_policy == dg.RetryPolicy(max_retries=2, delay=1)
    chunk_op = ORDERS_DEFS.resolve_job_def(CHUNK_JOB).graph.node_named(op_name(ORDER_FACTS)).definition
    assert chunk_op.retry_policy == dg.RetryPolicy(max_retries=2, delay=1)
    # A side effect is tried once unless it declares retries: a retry would deliver again under the same key.
    assert ORDERS_DEFS.resolve_assets_def(dg.AssetKey(REVENUE_ALERT)).op.retry_policy is None


@pytest.mark.parametrize(
    "policy, says",
    [
        (3, "retry_policy must be a dagster RetryPolicy (e.g. dg.RetryPolicy(max_retries=3, delay=1)), not int 3"),
        ({"max_retries": 3}, "retry_policy must be a dagster RetryPolicy"),
        (dg.RetryPolicy(max_retries=-1), "retry_policy.max_retries must be 0 or more, not -1"),
    ],
)
def test_a_retry_policy_that_is_not_one_is_refused_when_declared(policy, says):
    with pytest.raises(InvalidInput, match="^flaky: " + re.escape(says)) as refused:
        gated_asset(calendar=CALENDAR, retry_policy=policy, name="flaky")(lambda: pd.DataFrame({"n": [1]}))
    assert "\n" not in str(refused.value)
    with pytest.raises(InvalidInput, match="^notify: " + re.escape(says)):
        side_effect_asset(calendar=CALENDAR, deps=[tried_once], deliver=lambda payload: None, name="notify",
                          retry_policy=policy)(lambda tried_once: {"n": len(tried_once)})
