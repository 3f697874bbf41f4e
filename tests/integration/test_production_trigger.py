"""The production_trigger sensor evaluated with Dagster's ``build_sensor_context`` on a real instance, with a fake
clock moved by hand: after downtime it submits the missed days in order in the production lane (catchup on) or
only the newest (off), its run requests really run, and nothing already published or in flight is submitted
again."""

from __future__ import annotations

import uuid
from datetime import datetime

import dagster as dg
import pytest

from backfill_assets import backfill_definitions
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.examples.orders.definitions import (
    customer_snapshot,
    daily_revenue,
    order_facts,
    raw_orders,
    revenue_alert,
)
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE
from backfill_assets.examples.orders.resources import AlertSink, OrdersSource
from backfill_assets.integration.jobs import PRODUCTION_JOB
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.local_runs import run_partitions
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.production import PRODUCTION_SENSOR
from tests.orders import CALENDAR

EVERY_ASSET = [raw_orders, order_facts, daily_revenue, customer_snapshot, revenue_alert]
# The orders location without its depends-on-past asset: its missed days can all be submitted at once.
NO_SNAPSHOT = [raw_orders, order_facts, daily_revenue, revenue_alert]


class Clock:
    """The trigger's "now", moved by the test: no sleeping, no wall clock."""

    def __init__(self, local: str):
        self.move_to(local)

    def move_to(self, local: str) -> None:
        self.now = datetime.fromisoformat(local).replace(tzinfo=CALENDAR.tz)

    def __call__(self) -> datetime:
        return self.now


def location(clock: Clock, assets=NO_SNAPSHOT, **production) -> dg.Definitions:
    return backfill_definitions(
        assets=assets, resources={"orders_source": OrdersSource(), "alert_sink": AlertSink()}, clock=clock,
        **production,
    )


def evaluate(env, defs: dg.Definitions, cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(instance=env.instance, cursor=cursor, resources={"backfill": BackfillResource()})
    return defs.resolve_sensor_def(PRODUCTION_SENSOR)(context)


def execute(env, defs: dg.Definitions, result: dg.SensorResult) -> None:
    """Run the requests for real, as the daemon would launch them."""
    for request in result.run_requests:
        assets = [k.to_user_string() for k in request.asset_selection] if request.asset_selection else None
        # Dagster's sensor daemon adds the sensor's name and the run key to the run's tags.
        tags = {**request.tags, T.DAGSTER_SENSOR: PRODUCTION_SENSOR, RUN_KEY_TAG: request.run_key}
        [run] = run_partitions(env.instance, [request.partition_key], defs=defs, assets=assets, tags=tags)
        assert run.success, run.failure


def days(result: dg.SensorResult) -> list[str]:
    return [r.partition_key for r in result.run_requests]


def test_after_downtime_the_missed_days_are_submitted_in_order_in_the_production_lane_and_run(env):
    clock = Clock("2022-09-02T02:00")
    defs = location(clock)

    first = evaluate(env, defs, cursor=None)  # first start: the newest complete day only
    assert days(first) == ["2022-09-01"] and first.cursor == "2022-09-01"
    execute(env, defs, first)

    clock.move_to("2022-09-05T02:00")  # down for three days
    caught_up = evaluate(env, defs, first.cursor)

    assert days(caught_up) == ["2022-09-02", "2022-09-03", "2022-09-04"]
    for request in caught_up.run_requests:
        assert request.job_name == PRODUCTION_JOB and request.asset_selection is None
        assert request.run_key == f"production/{request.partition_key}"
        assert request.tags[T.LANE] == T.LANE_PRODUCTION
        assert int(request.tags[T.DAGSTER_PRIORITY]) == T.PRIORITY_PRODUCTION
    assert caught_up.cursor == "2022-09-04"
    execute(env, defs, caught_up)
    published = env.catalog.current_many(DAILY_REVENUE, ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"])
    assert sorted(published) == ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"]

    again = evaluate(env, defs, caught_up.cursor)
    assert days(again) == [] and again.cursor == "2022-09-04"
    # Even with its cursor lost, production submits none of the published days again.
    reset = evaluate(env, defs, cursor="2022-08-31")
    assert days(reset) == [] and reset.cursor == "2022-09-04"


def test_a_depends_on_past_asset_catches_up_one_day_after_another(env):
    clock = Clock("2022-09-02T02:00")
    defs = location(clock, EVERY_ASSET, production_start="2022-09-01")
    submitted, cursor = [], None
    result = evaluate(env, defs, cursor)
    clock.move_to("2022-09-05T02:00")
    for _ in range(8):
        if not result.run_requests:
            break
        submitted += days(result)
        assert len(result.run_requests) == 1  # the next day waits for this one's snapshot
        execute(env, defs, result)
        cursor = result.cursor
        result = evaluate(env, defs, cursor)

    assert submitted == ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"]
    assert cursor == "2022-09-04"
    assert sorted(env.catalog.current_many(CUSTOMER_SNAPSHOT, submitted)) == submitted


def test_with_catchup_off_only_the_newest_day_runs_after_downtime(env):
    clock = Clock("2022-09-05T02:00")
    defs = location(clock, catchup=False)

    result = evaluate(env, defs, cursor="2022-09-01")

    assert days(result) == ["2022-09-04"] and result.cursor == "2022-09-04"
    clock.move_to("2022-09-06T02:00")
    assert days(evaluate(env, defs, result.cursor)) == ["2022-09-05"]


# Waiting to start, or running. (A QUEUED run needs a code location's origin to be stored; the in-flight read is
# the same for every status of runs.IN_FLIGHT_STATUSES, tests/integration/test_in_flight.py.)
@pytest.mark.parametrize("status", [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTED])
def test_a_published_day_and_a_day_with_a_run_in_flight_are_not_submitted_again(env, status):
    clock = Clock("2022-09-05T02:00")
    defs = location(clock)
    # 2022-09-02 was published meanwhile (by hand); a backfill run of 2022-09-03 has not finished.
    # (Its data only: a side effect of a day production no longer delivers needs an approver.)
    data = [a.name for a in NO_SNAPSHOT if a is not revenue_alert]
    [manual] = run_partitions(env.instance, ["2022-09-02"], defs=defs, assets=data, tags={T.LANE: T.LANE_MANUAL})
    assert manual.success
    in_flight = dg.DagsterRun(job_name=PRODUCTION_JOB, run_id=str(uuid.uuid4()), status=status,
                              tags={T.DAGSTER_PARTITION: "2022-09-03", T.LANE: T.LANE_BACKFILL})
    env.instance.add_run(in_flight)

    result = evaluate(env, defs, cursor="2022-09-01")

    assert days(result) == ["2022-09-04"]
    assert result.cursor == "2022-09-04"


def test_bad_production_settings_are_refused_when_the_location_is_built():
    clock = Clock("2022-09-05T02:00")
    with pytest.raises(InvalidInput, match="catchup must be True or False"):
        location(clock, catchup="yes")
    with pytest.raises(InvalidInput, match="before the calendar's first day"):
        location(clock, production_start="2022-08-01")
    with pytest.raises(InvalidInput, match="YYYY-MM-DD"):
        location(clock, production_start="1 Sep 2022")
    with pytest.raises(InvalidInput, match="clock must be a callable"):
        location("2022-09-05T02:00")


def test_a_cursor_that_is_not_a_day_fails_the_evaluation_instead_of_guessing(env):
    defs = location(Clock("2022-09-05T02:00"))
    with pytest.raises(Exception, match="production trigger cursor"):
        evaluate(env, defs, cursor="last tuesday")
