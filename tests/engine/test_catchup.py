"""Which complete intervals production submits, in order, and why it passes over the others (Airflow's catchup):
the pure decision over a clock, a cursor and each cell's facts. tests/integration/test_production_trigger.py
evaluates the real sensor on a real instance."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.plan.catchup import (
    Action,
    CatchupSettings,
    CellNow,
    due_intervals,
    plan_production,
)
from backfill_assets.examples.orders.domain import (
    CUSTOMER_SNAPSHOT,
    DAILY_REVENUE,
    ORDER_FACTS,
    RAW_ORDERS,
    REVENUE_ALERT,
)
from tests.orders import GRAPH

SHANGHAI = ZoneInfo("Asia/Shanghai")
# The orders graph without its depends-on-past asset: every missed interval can go at once.
FLAT = AssetGraph(GRAPH.calendar, [s for s in GRAPH if not s.depends_on_past])
CATCHUP = CatchupSettings(catchup=True)
NO_CATCHUP = CatchupSettings(catchup=False)


def at(local: str) -> datetime:
    return datetime.fromisoformat(local).replace(tzinfo=SHANGHAI)


def facts(published=(), running=None):
    """``published``: cells with a current version; ``running``: cell → run id of a queued or running run."""
    published, running = set(published), dict(running or {})
    return lambda asset, day: CellNow((asset, day) in published, running.get((asset, day)))


def plan(graph=FLAT, now="2022-09-06T02:00", cursor="2022-09-01", settings=CATCHUP, **cells):
    return plan_production(graph, now=at(now), cursor=cursor, settings=settings, facts_of=facts(**cells))


def by_action(result, action: Action) -> list[str]:
    return [d.partition for d in result.decisions if d.action == action]


def test_after_downtime_catchup_submits_every_missed_interval_in_order():
    result = plan(cursor="2022-09-01")

    assert [d.partition for d in result.submissions] == ["2022-09-02", "2022-09-03", "2022-09-04", "2022-09-05"]
    assert all(d.assets == FLAT.names for d in result.submissions)
    assert result.cursor == "2022-09-05"


def test_catchup_off_runs_only_the_newest_interval_and_passes_over_the_missed_ones():
    result = plan(cursor="2022-09-01", settings=NO_CATCHUP)

    assert [d.partition for d in result.submissions] == ["2022-09-05"]
    assert by_action(result, Action.SKIP) == ["2022-09-02", "2022-09-03", "2022-09-04"]
    assert all("catchup off" in d.reason for d in result.decisions if d.action == Action.SKIP)
    assert result.cursor == "2022-09-05"


def test_first_start_runs_only_the_newest_interval_not_the_calendar_from_its_first_day():
    result = plan(cursor=None)

    assert [d.partition for d in result.decisions] == ["2022-09-05"]
    assert result.cursor == "2022-09-05"
    assert "first start" in result.notes[0]


def test_first_start_with_production_start_catches_up_from_it_and_never_runs_before_it():
    from_start = plan(cursor=None, settings=CatchupSettings(True, "2022-09-03"))
    assert [d.partition for d in from_start.submissions] == ["2022-09-03", "2022-09-04", "2022-09-05"]

    # A floor for a cursor behind it too, with or without catchup.
    behind = plan(cursor="2022-09-01", settings=CatchupSettings(True, "2022-09-04"))
    assert [d.partition for d in behind.decisions] == ["2022-09-04", "2022-09-05"]
    newest_only = plan(cursor=None, settings=CatchupSettings(False, "2022-09-03"))
    assert [d.partition for d in newest_only.decisions] == ["2022-09-05"]


def test_an_interval_is_due_one_hour_after_it_ends():
    early = plan(now="2022-09-06T00:59", cursor="2022-09-04")
    assert early.decisions == () and early.cursor == "2022-09-04"

    assert [d.partition for d in plan(now="2022-09-06T01:00", cursor="2022-09-04").submissions] == ["2022-09-05"]


def test_a_dst_day_is_due_one_hour_after_its_own_end():
    new_york = BusinessCalendar("America/New_York", "2023-01-01")
    # 2023-03-12 is 23 hours long: it ends at 2023-03-13T00:00-04:00, due at 01:00-04:00 (05:00 UTC).
    before = datetime.fromisoformat("2023-03-13T04:59:00+00:00")
    after = datetime.fromisoformat("2023-03-13T05:00:00+00:00")

    assert due_intervals(new_york, before, "2023-03-11", CATCHUP).candidates == ()
    assert due_intervals(new_york, after, "2023-03-11", CATCHUP).candidates == ("2023-03-12",)


def test_a_published_interval_is_skipped_and_a_partly_published_one_runs_only_what_is_left():
    days = ["2022-09-03", "2022-09-04"]
    result = plan(
        cursor="2022-09-02", now="2022-09-05T02:00",
        published=[(a, days[0]) for a in FLAT.data_assets] + [(RAW_ORDERS, days[1]), (ORDER_FACTS, days[1])],
    )

    assert [(d.partition, d.action) for d in result.decisions] == [(days[0], Action.SKIP), (days[1], Action.SUBMIT)]
    assert result.decisions[0].reason == "published"
    assert result.submissions[0].assets == (DAILY_REVENUE, REVENUE_ALERT)
    assert result.cursor == days[1]


def test_an_interval_another_run_is_writing_is_not_submitted_again():
    running = {(a, "2022-09-03"): "run-backfill-1" for a in FLAT.data_assets}
    result = plan(cursor="2022-09-02", now="2022-09-04T02:00", running=running)

    assert result.submissions == []
    assert result.decisions[0].action == Action.SKIP and "in flight" in result.decisions[0].reason
    assert result.cursor == "2022-09-03"


def test_a_partly_running_interval_waits_and_the_later_ones_wait_behind_it():
    result = plan(cursor="2022-09-01", running={(RAW_ORDERS, "2022-09-03"): "run-queued-1"})

    assert [d.partition for d in result.submissions] == ["2022-09-02"]
    assert by_action(result, Action.WAIT) == ["2022-09-03", "2022-09-04", "2022-09-05"]
    assert "run-queu" in result.decisions[1].reason
    assert result.cursor == "2022-09-02"  # the waiting ones are decided again next time


def test_a_first_start_that_waits_still_fixes_where_production_begins():
    result = plan(cursor=None, running={(RAW_ORDERS, "2022-09-05"): "run-queued-1"})

    assert result.submissions == [] and result.cursor == "2022-09-04"
    # A day later, the waiting interval is still production's, and so is the new one.
    later = plan(cursor=result.cursor, now="2022-09-07T02:00")
    assert [d.partition for d in later.submissions] == ["2022-09-05", "2022-09-06"]


def test_depends_on_past_intervals_are_submitted_one_after_another():
    published = [(a, "2022-09-01") for a in GRAPH.data_assets]
    first = plan(GRAPH, cursor="2022-09-01", published=published)
    assert [d.partition for d in first.submissions] == ["2022-09-02"]
    assert first.submissions[0].assets == GRAPH.names
    assert first.decisions[1].action == Action.WAIT and "submitted just before" in first.decisions[1].reason
    assert first.cursor == "2022-09-02"

    running = {(a, "2022-09-02"): "run-prod-0902" for a in GRAPH.data_assets}
    second = plan(GRAPH, cursor=first.cursor, published=published, running=running)
    assert second.submissions == [] and second.cursor == "2022-09-02"
    assert "still running" in second.decisions[0].reason

    published += [(a, "2022-09-02") for a in GRAPH.data_assets]
    third = plan(GRAPH, cursor=second.cursor, published=published)
    assert [d.partition for d in third.submissions] == ["2022-09-03"]


def test_a_depends_on_past_asset_is_left_out_after_a_gap_and_the_rest_still_runs():
    # 2022-09-03's snapshot was never published (rejected, say): later snapshots are not computed around it.
    published = [(a, "2022-09-03") for a in GRAPH.data_assets if a != CUSTOMER_SNAPSHOT]
    result = plan(GRAPH, cursor="2022-09-03", published=published)

    assert [d.partition for d in result.submissions] == ["2022-09-04", "2022-09-05"]
    assert all(CUSTOMER_SNAPSHOT not in d.assets and DAILY_REVENUE in d.assets for d in result.submissions)
    assert "previous interval 2022-09-03 has no published version" in result.submissions[0].reason
    assert result.cursor == "2022-09-05"


def test_a_side_effect_runs_only_in_the_run_that_publishes_its_inputs():
    day = "2022-09-04"
    published = [(a, d) for a in GRAPH.data_assets for d in ("2022-09-03", day) if (a, d) != (CUSTOMER_SNAPSHOT, day)]
    result = plan(GRAPH, cursor="2022-09-03", now="2022-09-05T02:00", published=published)

    assert [d.assets for d in result.submissions] == [(CUSTOMER_SNAPSHOT,)]


@pytest.mark.parametrize(
    "make",
    [
        lambda: CatchupSettings(catchup="yes"),
        lambda: CatchupSettings(catchup=1),
        lambda: CatchupSettings(True, "2022-13-01"),
        lambda: CatchupSettings(True, datetime(2022, 9, 2)),
        lambda: CatchupSettings(True, "2022-08-31").check(GRAPH.calendar),
        lambda: plan(cursor="yesterday"),
        lambda: plan_production(FLAT, now=datetime(2022, 9, 6), cursor=None, settings=CATCHUP, facts_of=facts()),
    ],
    ids=["catchup-string", "catchup-int", "start-not-a-date", "start-a-datetime", "start-before-calendar",
         "cursor-not-a-day", "naive-clock"],
)
def test_bad_settings_cursor_or_clock_are_refused(make):
    with pytest.raises(InvalidInput):
        make()
