"""revenue_alert: sends through the outbox once per content; only the production trigger's run of the day
production delivers now goes without an approver. Every other run — launched with no tags, a typed production
lane, forged production-trigger or request tags — needs an approver, on real runs of a real instance."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from backfill_assets import backfill_definitions, backfills_for_instance
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.definitions import daily_revenue, order_facts, raw_orders, revenue_alert
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.examples.orders.resources import AlertSink, OrdersSource
from backfill_assets.integration.runs import local_runs
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.production import PRODUCTION_RUN_KEY, PRODUCTION_SENSOR
from backfill_assets.service import RequestInput
from tests.orders import CALENDAR, GRAPH, run_partitions

DAY = "2022-09-01"
UPSTREAM = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
NOT_AUTHORIZED = "side effect not authorized"


def trigger_tags(day: str) -> dict[str, str]:
    """The tags Dagster's sensor daemon puts on the production trigger's run of ``day``."""
    return {T.LANE: T.LANE_PRODUCTION, T.DAGSTER_SENSOR: PRODUCTION_SENSOR, RUN_KEY_TAG: PRODUCTION_RUN_KEY.format(day)}


def location_on(local_now: str):
    """The orders location whose clock says ``local_now`` (business time): the day before is production's."""
    now = datetime.fromisoformat(local_now).replace(tzinfo=CALENDAR.tz)
    return backfill_definitions(
        assets=[raw_orders, order_facts, daily_revenue, revenue_alert],
        resources={"orders_source": OrdersSource(), "alert_sink": AlertSink()}, clock=lambda: now,
    )


def _sink_lines(env) -> list[dict]:
    path = env.settings.sink_path
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    except FileNotFoundError:
        return []


def test_the_production_triggers_run_of_todays_day_sends_once_and_a_repeat_sends_nothing(env):
    defs = location_on("2022-09-02T02:00")
    for _ in range(2):
        [run] = local_runs.run_partitions(env.instance, [DAY], defs=defs, assets=[*UPSTREAM, REVENUE_ALERT],
                                          tags=trigger_tags(DAY))
        assert run.success, run.failure
    lines = _sink_lines(env)
    assert len(lines) == 1 and lines[0]["business_date"] == DAY
    assert len(deliveries(env.catalog, DAY)) == 1


@pytest.mark.parametrize(
    "tags",
    [{T.LANE: ""}, {T.LANE: T.LANE_PRODUCTION}, {T.LANE: T.LANE_MANUAL}, {T.DAGSTER_SCHEDULE: "daily"}],
    ids=["no-tags", "typed-production-lane", "manual-lane", "schedule-tag"],
)
def test_a_run_launched_by_hand_for_a_backfilled_day_delivers_nothing_without_an_approver(env, tags):
    run_partitions(env.instance, [DAY], assets=UPSTREAM)
    [run] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=tags)
    assert not run.success and NOT_AUTHORIZED in run.failure and "nothing delivered" in run.failure
    assert _sink_lines(env) == [] and deliveries(env.catalog, DAY) == []


def test_forged_production_trigger_tags_deliver_nothing_for_a_day_production_does_not_deliver_now(env):
    # The tags say "production trigger", but production today delivers 2022-09-04's alert, not 2022-09-01's.
    defs = location_on("2022-09-05T02:00")
    [run] = local_runs.run_partitions(env.instance, [DAY], defs=defs, assets=[*UPSTREAM, REVENUE_ALERT],
                                      tags=trigger_tags(DAY))
    assert run.success, run.failure  # the data is production's to publish; only the side effect is held back
    assert env.catalog.current(DAILY_REVENUE, DAY) is not None
    assert _sink_lines(env) == [] and deliveries(env.catalog, DAY) == []


def test_forged_request_tags_are_checked_against_the_request_in_the_catalog(env):
    run_partitions(env.instance, [DAY], assets=UPSTREAM)
    forged = {T.REQUEST_ID: "req-20221101-deadbeef", T.LANE: T.LANE_BACKFILL, T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT,
              T.APPROVED_BY: "cfo"}
    [run] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=forged)
    assert not run.success and "req-20221101-deadbeef (not in the catalog)" in run.failure
    # A real request without approval, its run's tags edited to claim one: the catalog's record decides.
    service = backfills_for_instance(GRAPH, env.instance, env.catalog)
    request_id = service.create(RequestInput(assets=[DAILY_REVENUE], from_day=DAY, to_day=DAY)).request.request_id
    [run] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags={**forged, T.REQUEST_ID: request_id})
    assert not run.success and f"request {request_id} names no approver" in run.failure
    assert _sink_lines(env) == []

    approved = {T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "cfo"}
    [ok] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=approved)
    [repeat] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=approved)
    assert ok.success and repeat.success
    assert len(_sink_lines(env)) == 1
