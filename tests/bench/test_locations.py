"""The benchmarks' orders code locations (bench/locations): the ten-year one holds 3,650 complete days before today,
its definitions load with the same assets on its own calendar, and bench.run picks the location every contender
shares (no contender runs here)."""

from __future__ import annotations

from datetime import datetime, timezone

import dagster as dg
import pytest

from backfill_assets import graph_of
from backfill_assets.examples.orders.definitions import defs as demo_defs
from backfill_assets.examples.orders.domain import DATA_ASSETS
from bench.locations import DEMO, TEN_YEARS, location_for
from bench.plain import CALENDAR
from bench.run import chosen, chosen_location, parse_args
from bench.workspace import Sizes

TEN_YEARS_DAYS = 3650


def test_the_ten_year_location_reaches_3650_complete_days_before_today():
    newest = CALENDAR.newest_complete_key(datetime.now(timezone.utc))
    assert newest is not None and TEN_YEARS.last_of(TEN_YEARS_DAYS) <= newest
    keys = Sizes(days=TEN_YEARS_DAYS, location=TEN_YEARS.name).keys
    assert (len(keys), keys[0], keys[-1]) == (TEN_YEARS_DAYS, TEN_YEARS.first_day, TEN_YEARS.last_of(TEN_YEARS_DAYS))
    assert CALENDAR.keys_between(keys[0], keys[-1]) == keys  # the floor and the seeding know these days too


def test_the_ten_year_definitions_load_with_the_demo_assets_on_their_own_calendar():
    from bench.locations.orders_ten_years import defs

    graph, demo = graph_of(defs), graph_of(demo_defs)
    assert graph.calendar.first_day.isoformat() == TEN_YEARS.first_day
    assert demo.calendar.first_day.isoformat() == DEMO.first_day  # the demo keeps its own days
    assert graph.names == demo.names and set(DATA_ASSETS) <= set(graph.names)
    partitions = defs.resolve_asset_graph().get(dg.AssetKey("daily_revenue")).partitions_def
    assert partitions.start.date().isoformat() == TEN_YEARS.first_day


def test_location_for_takes_the_demo_while_its_days_fit_and_refuses_beyond_ten_years():
    assert location_for(365, "2026-12-05") == DEMO
    assert location_for(TEN_YEARS_DAYS, "2026-12-05") == TEN_YEARS
    with pytest.raises(ValueError, match="no benchmark location"):
        location_for(40_000, "2026-12-05")


def test_bench_run_puts_every_contender_on_one_location_and_refuses_the_demo_only_ones_on_ten_years():
    now = datetime.now(timezone.utc)
    args = parse_args(["--only", "F,F2,B", "--days", "365", "--scale", "3650", "--no-past"])
    assert chosen_location(args, chosen(args), now) == TEN_YEARS.name
    args = parse_args(["--only", "F,B", "--days", "20"])
    assert chosen_location(args, chosen(args), now) == DEMO.name
    args = parse_args(["--only", "F,N", "--days", "20", "--location", "ten-years", "--no-past"])
    with pytest.raises(SystemExit, match="not: N"):
        chosen_location(args, chosen(args), now)
