"""A step waiting for a pool slot in Dagster's in-process executor sleeps until its next claim instead of spinning
(``integration/runs/dagster_adapter/pool_waits.py``), on a real instance with a real run."""

from __future__ import annotations

import threading
import time

import dagster as dg
import pytest
from dagster._core.execution.plan.active import ActiveExecution
from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext

from backfill_assets.integration.runs.dagster_adapter import pool_waits, sleep_while_waiting_for_pool_slots

POOL = "pool_waits_test"
HOLDER_RUN, HOLDER_STEP = "another-run", "another-step"
# The claim's own back-off: Dagster asks the pool again after 1 s, then a little later each time.
HELD_FOR_SECONDS = 2.0


def _context(pending: dict[str, float]) -> InstanceConcurrencyContext:
    context = object.__new__(InstanceConcurrencyContext)
    context._pending_claims = set(pending)
    context._pending_timeouts = dict(pending)
    return context


def test_dagsters_own_method_gives_a_waiting_step_no_sleep_and_ours_the_time_to_its_next_claim():
    assert pool_waits.spins_while_waiting(pool_waits.DAGSTERS_METHOD), (
        "Dagster now sleeps while a step waits in a pool: pool_waits.py is no longer needed")
    ours = pool_waits.interval_to_next_pending_claim_check
    assert not pool_waits.spins_while_waiting(ours)
    now = time.time()
    assert ours(_context({})) == 0.0
    assert 9.0 < ours(_context({"a": now + 10.0, "b": now + 20.0})) <= 10.0
    assert ours(_context({"a": now - 5.0, "b": now + 20.0})) == 0.0  # one is due: ask at once
    no_timeout = _context({})
    no_timeout._pending_claims = {"a"}
    assert ours(no_timeout) == 0.0


def test_building_a_code_location_installs_it_and_only_over_a_method_that_spins(monkeypatch):
    monkeypatch.setattr(InstanceConcurrencyContext, "interval_to_next_pending_claim_check",
                        pool_waits.DAGSTERS_METHOD)
    from backfill_assets.examples.orders.definitions import orders_definitions

    orders_definitions()
    assert InstanceConcurrencyContext.interval_to_next_pending_claim_check is (
        pool_waits.interval_to_next_pending_claim_check)

    def fixed(self) -> float:
        return 1.0

    monkeypatch.setattr(InstanceConcurrencyContext, "interval_to_next_pending_claim_check", fixed)
    sleep_while_waiting_for_pool_slots()
    assert InstanceConcurrencyContext.interval_to_next_pending_claim_check is fixed


@dg.op(pool=POOL)
def pooled_step() -> int:
    return 1


@dg.job
def pooled_job():
    pooled_step()


@pytest.mark.parametrize("fixed", [True, False], ids=["sleeping", "dagsters-own"])
def test_a_run_whose_step_waits_in_a_held_pool_asks_for_its_next_step_a_few_times_not_thousands(
    tmp_path, monkeypatch, fixed
):
    monkeypatch.setattr(InstanceConcurrencyContext, "interval_to_next_pending_claim_check",
                        pool_waits.interval_to_next_pending_claim_check if fixed else pool_waits.DAGSTERS_METHOD)
    asked = [0]
    original = ActiveExecution.get_next_step

    def counting(self):
        asked[0] += 1
        return original(self)

    monkeypatch.setattr(ActiveExecution, "get_next_step", counting)
    overrides = {"concurrency": {"pools": {"default_limit": 1, "granularity": "op"}}}
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=overrides) as instance:
        storage = instance.event_log_storage
        storage.initialize_concurrency_limit_to_default(POOL)
        assert storage.claim_concurrency_slot(POOL, HOLDER_RUN, HOLDER_STEP).is_claimed
        releaser = threading.Timer(HELD_FOR_SECONDS,
                                   lambda: storage.free_concurrency_slot_for_step(HOLDER_RUN, HOLDER_STEP))
        releaser.start()
        try:
            result = pooled_job.execute_in_process(instance=instance)
        finally:
            releaser.cancel()
    assert result.success
    if fixed:
        assert asked[0] < 50, asked[0]  # a handful of claims over the wait, each after its back-off
    else:
        assert asked[0] > 1000, asked[0]  # the spin this module removes: Dagster asks without sleeping
