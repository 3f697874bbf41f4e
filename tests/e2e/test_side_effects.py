"""revenue_alert in backfills driven by a real dagster-daemon: excluded unless authorized, never sent twice."""

from __future__ import annotations

import json

import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT

pytestmark = pytest.mark.daemon

DAYS = ("2022-09-18", "2022-09-19")
SELECTION = f"{DAILY_REVENUE},{REVENUE_ALERT}"
NOT_AUTHORIZED = "side effect not authorized"


def sink_lines(e2e) -> list[dict]:
    try:
        with open(e2e.settings.sink_path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except FileNotFoundError:
        return []


def test_side_effect_is_skipped_unless_authorized_and_an_authorized_repeat_sends_nothing_twice(e2e):
    e2e.prepare(DAYS, [RAW_ORDERS, ORDER_FACTS])
    args = ("--assets", SELECTION, "--from", DAYS[0], "--to", DAYS[1])

    # Without authorization: the dry run and the request leave every revenue_alert cell out.
    plan = {(c["asset"], c["partition_key"]): (c["action"], c["reason"]) for c in e2e.dry_run(*args)}
    for day in DAYS:
        assert plan[(REVENUE_ALERT, day)] == ("skip", NOT_AUTHORIZED)
        assert plan[(DAILY_REVENUE, day)][0] == "create"
    unauthorized = e2e.create(*args)["request_id"]
    # Left out at creation, before any driver tick: skipped at once and not claimed.
    at_creation = {(c["asset"], c["partition_key"]): c for c in e2e.show(unauthorized)["cells"]}
    assert {d: at_creation[(REVENUE_ALERT, d)]["decision"] for d in DAYS} == {d: "skipped" for d in DAYS}
    assert e2e.claims_of(unauthorized) == {(DAILY_REVENUE, d) for d in DAYS}
    e2e.wait(unauthorized)
    cells = {(c["asset"], c["partition_key"]): c for c in e2e.show(unauthorized)["cells"]}
    for day in DAYS:
        assert (cells[(REVENUE_ALERT, day)]["decision"], cells[(REVENUE_ALERT, day)]["reason"]) == (
            "skipped", NOT_AUTHORIZED,
        )
        assert cells[(REVENUE_ALERT, day)]["dagster_run_id"] is None
        assert cells[(DAILY_REVENUE, day)]["decision"] == "published"
    assert e2e.run_cells(unauthorized) == {(DAILY_REVENUE, d) for d in DAYS}
    assert sink_lines(e2e) == []

    # Authorized with an approver: the alert is sent, once per day.
    authorized_args = (*args, "--allow-side-effects", REVENUE_ALERT, "--approved-by", "cfo")
    plan = {(c["asset"], c["partition_key"]): c["action"] for c in e2e.dry_run(*authorized_args)}
    assert {cell for cell, action in plan.items() if action == "create"} == {(REVENUE_ALERT, d) for d in DAYS}
    authorized = e2e.create(*authorized_args)["request_id"]
    e2e.wait(authorized)
    assert e2e.run_cells(authorized) == {(REVENUE_ALERT, d) for d in DAYS}
    for record in e2e.run_records(authorized):
        assert record.dagster_run.tags[T.ALLOW_SIDE_EFFECTS] == REVENUE_ALERT
        assert record.dagster_run.tags[T.APPROVED_BY] == "cfo"
    sent = sink_lines(e2e)
    assert sorted(line["business_date"] for line in sent) == list(DAYS)

    # The same authorized request again: its runs succeed, and nothing is sent a second time.
    repeat = e2e.create(*authorized_args)["request_id"]
    e2e.wait(repeat)
    assert e2e.run_cells(repeat) == {(REVENUE_ALERT, d) for d in DAYS}
    assert all(r.dagster_run.status.value == "SUCCESS" for r in e2e.run_records(repeat))
    assert sink_lines(e2e) == sent
