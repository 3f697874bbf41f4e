"""revenue_alert: sends through the outbox once per content; backfills need explicit authorization."""

from __future__ import annotations

import json

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from tests.orders import run_partitions

DAY = "2022-09-01"
UPSTREAM = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]


def _sink_lines(env) -> list[dict]:
    path = env.settings.sink_path
    try:
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh]
    except FileNotFoundError:
        return []


def test_production_sends_once_and_a_repeat_sends_nothing(env):
    [first] = run_partitions(env.instance, [DAY], assets=[*UPSTREAM, REVENUE_ALERT])
    assert first.success, first.failure
    [again] = run_partitions(env.instance, [DAY], assets=[*UPSTREAM, REVENUE_ALERT])
    assert again.success, again.failure
    lines = _sink_lines(env)
    assert len(lines) == 1 and lines[0]["business_date"] == DAY
    assert len(deliveries(env.catalog, DAY)) == 1


def test_backfill_without_authorization_sends_nothing(env):
    run_partitions(env.instance, [DAY], assets=UPSTREAM)
    backfill_tags = {T.REQUEST_ID: "req-20221101-deadbeef", T.LANE: T.LANE_BACKFILL}
    [run] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=backfill_tags)
    assert not run.success and "not authorized" in run.failure
    assert _sink_lines(env) == []

    authorized = {**backfill_tags, T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "cfo"}
    [ok] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=authorized)
    [repeat] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=authorized)
    assert ok.success and repeat.success
    assert len(_sink_lines(env)) == 1
