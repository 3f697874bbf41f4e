"""The orders code locations the benchmarks run, each with the first day of its partitions (no Dagster import: the
floor and Airflow's tasks read the days from here).

``demo`` is the orders example as shipped, its partitions from 2022-09-01. ``ten-years`` is the same assets on a
calendar from 2016-01-01 (``bench/locations/orders_ten_years.py``), so that a 3,650-day request, 2016-01-01 to
2025-12-28, ends before today: a request may not reach past the newest complete day. The start is fixed rather than
computed from the date so that every process of a run (daemon, code server, CLI) and every later run on a kept
folder sees the same partitions, and a seeded source stays valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from backfill_assets.examples.orders import MODULE
from backfill_assets.examples.orders.domain import DEMO_FIRST_DAY


@dataclass(frozen=True)
class Location:
    """A code location of the orders example: its name in ``bench.run --location``, its module, its first day."""

    name: str
    module: str
    first_day: str

    def last_of(self, days: int) -> str:
        """The last of ``days`` consecutive days from the first day (every day is a business day)."""
        return (date.fromisoformat(self.first_day) + timedelta(days=days - 1)).isoformat()


DEMO = Location("demo", MODULE, DEMO_FIRST_DAY)
TEN_YEARS = Location("ten-years", "bench.locations.orders_ten_years", "2016-01-01")
LOCATIONS = {location.name: location for location in (DEMO, TEN_YEARS)}
EARLIEST_FIRST_DAY = min(location.first_day for location in LOCATIONS.values())
AUTO = "auto"


def location_for(days: int, newest_complete_day: str) -> Location:
    """The demo location when ``days`` days from its first day end by ``newest_complete_day``, else ten-years;
    a clear error when neither holds that many days."""
    for location in (DEMO, TEN_YEARS):
        if location.last_of(days) <= newest_complete_day:
            return location
    raise ValueError(f"{days} days from {TEN_YEARS.first_day} end after {newest_complete_day}, the newest complete "
                     f"day: no benchmark location holds them")
