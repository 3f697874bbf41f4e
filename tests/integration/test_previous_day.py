"""A depends-on-past asset's day in a backfill launched from Dagster computes only once the same backfill has
published its previous day (``integration/assets/previous_day.py``): on a real instance, runs tagged as the UI's
dialog and `dagster job backfill` tag them."""

from __future__ import annotations

import threading
import time
import uuid

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.keys import asset_key
from tests.orders import run_partitions

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]
BACKFILL = {T.DAGSTER_BACKFILL: "prevday1", T.LANE: ""}  # a UI backfill's runs carry no lane tag of ours
SPOILT = {"ops": {CUSTOMER_SNAPSHOT: {"config": {"defect": "duplicate_keys"}}}}


def _published_by_production(env) -> dict[str, str]:
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS]))
    assert all(r.success for r in run_partitions(env.instance, DAYS, assets=[CUSTOMER_SNAPSHOT]))
    return {day: env.catalog.current(CUSTOMER_SNAPSHOT, day).version_id for day in DAYS}


def _logs(env, run_id: str) -> str:
    return " ".join(r.user_message for r in env.instance.all_logs(run_id))


def test_a_day_whose_previous_day_the_backfill_rejected_is_not_attempted(env):
    serving = _published_by_production(env)
    [first] = run_partitions(env.instance, [DAYS[0]], assets=[CUSTOMER_SNAPSHOT], tags=BACKFILL,
                             run_config_for={DAYS[0]: SPOILT})
    assert not first.success and env.catalog.versions_of(CUSTOMER_SNAPSHOT, DAYS[0])[-1].state == "REJECTED"
    [second] = run_partitions(env.instance, [DAYS[1]], assets=[CUSTOMER_SNAPSHOT], tags=BACKFILL)
    assert not second.success
    assert (f"{CUSTOMER_SNAPSHOT} {DAYS[1]}: not attempted — previous day {DAYS[0]} not published by this backfill "
            f"(run {first.run_id[:8]}: its version ") in second.failure, second.failure
    # Nothing computed: production's version of the day still serves, and no version was started.
    assert [v.version_id for v in env.catalog.versions_of(CUSTOMER_SNAPSHOT, DAYS[1])] == [serving[DAYS[1]]]


def test_a_day_reads_the_previous_day_its_backfill_published(env):
    _published_by_production(env)
    runs = run_partitions(env.instance, DAYS[:2], assets=[CUSTOMER_SNAPSHOT], tags=BACKFILL)
    assert all(r.success for r in runs), [r.failure for r in runs]
    first, second = (env.catalog.current(CUSTOMER_SNAPSHOT, day) for day in DAYS[:2])
    assert first.dagster_run_id == runs[0].run_id and second.dagster_run_id == runs[1].run_id
    assert second.input_versions[f"{CUSTOMER_SNAPSHOT}/{DAYS[0]}"] == first.version_id


def _previous_day_run(env, status: dg.DagsterRunStatus) -> dg.DagsterRun:
    """A run of the backfill over the first day, as Dagster's backfill daemon makes it, in ``status``."""
    run = dg.DagsterRun(
        job_name="__ASSET_JOB", run_id=str(uuid.uuid4()), status=status,
        tags={**BACKFILL, T.DAGSTER_PARTITION: DAYS[0]}, asset_selection=frozenset({asset_key(CUSTOMER_SNAPSHOT)}),
    )
    return env.instance.add_run(run)


def test_a_day_waits_for_its_previous_days_running_run_then_decides_on_its_outcome(env):
    serving = _published_by_production(env)
    running = _previous_day_run(env, dg.DagsterRunStatus.STARTED)
    waiting = f"waiting for run {running.run_id[:8]} of this backfill to end"

    def end_it_once_waited_for() -> None:
        """The previous day's run ends only once the second day's step says it waits for it: never before, however
        slow the machine is to start the second day's run."""
        second_day = {T.DAGSTER_BACKFILL: BACKFILL[T.DAGSTER_BACKFILL], T.DAGSTER_PARTITION: DAYS[1]}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            runs = env.instance.get_runs(dg.RunsFilter(tags=second_day))
            if any(waiting in _logs(env, run.run_id) for run in runs):
                break
            time.sleep(0.1)
        env.instance.report_run_failed(running)

    ender = threading.Thread(target=end_it_once_waited_for)
    ender.start()
    [second] = run_partitions(env.instance, [DAYS[1]], assets=[CUSTOMER_SNAPSHOT], tags=BACKFILL)
    ender.join()
    assert waiting in _logs(env, second.run_id)
    assert not second.success
    assert (f"previous day {DAYS[0]} not published by this backfill (run {running.run_id[:8]}: the run ended "
            "failure without writing it)") in second.failure, second.failure
    assert [v.version_id for v in env.catalog.versions_of(CUSTOMER_SNAPSHOT, DAYS[1])] == [serving[DAYS[1]]]


def test_a_day_whose_previous_day_has_not_started_is_not_attempted_at_once(env):
    """Waiting for a run that has not started could hold the run slot it waits for: refused at once."""
    serving = _published_by_production(env)
    queued = _previous_day_run(env, dg.DagsterRunStatus.NOT_STARTED)
    [second] = run_partitions(env.instance, [DAYS[1]], assets=[CUSTOMER_SNAPSHOT], tags=BACKFILL)
    assert not second.success
    assert f"previous day {DAYS[0]} is not published yet: run {queued.run_id[:8]} of this backfill is not started" in (
        second.failure), second.failure
    assert [v.version_id for v in env.catalog.versions_of(CUSTOMER_SNAPSHOT, DAYS[1])] == [serving[DAYS[1]]]


def test_a_day_waiting_for_its_previous_day_stops_once_its_own_run_is_cancelled(env):
    """A run marked cancelled whose worker no signal reaches (its code server did not answer) stops waiting for
    the previous day instead of holding its run slot for hours: nothing computed, nothing written."""
    serving = _published_by_production(env)
    running = _previous_day_run(env, dg.DagsterRunStatus.STARTED)
    waiting = f"waiting for run {running.run_id[:8]} of this backfill to end"
    second_day = {T.DAGSTER_BACKFILL: BACKFILL[T.DAGSTER_BACKFILL], T.DAGSTER_PARTITION: DAYS[1]}

    def cancel_it_once_it_waits() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            runs = [r for r in env.instance.get_runs(dg.RunsFilter(tags=second_day)) if waiting in _logs(env, r.run_id)]
            if runs:
                env.instance.report_run_canceling(runs[0])  # marked only: no signal reaches the worker
                return
            time.sleep(0.1)

    canceller = threading.Thread(target=cancel_it_once_it_waits)
    canceller.start()
    [second] = run_partitions(env.instance, [DAYS[1]], assets=[CUSTOMER_SNAPSHOT], tags=BACKFILL)
    canceller.join()
    assert not second.success
    assert (f"run {second.run_id} is CANCELING: it was cancelled, so it may not publish (it was waiting for run "
            f"{running.run_id[:8]} of this backfill, the previous day {DAYS[0]})") in second.failure, second.failure
    assert [v.version_id for v in env.catalog.versions_of(CUSTOMER_SNAPSHOT, DAYS[1])] == [serving[DAYS[1]]]
