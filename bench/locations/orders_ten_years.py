"""The orders example on a calendar from 2016-01-01: the benchmarks' ten-year size (``bench/locations``).

The same assets, checks and resources as ``backfill_assets.examples.orders.definitions``; only the first partition
differs, so that 3,650 complete days lie before today. ``backfill-assets-daemon run -m
bench.locations.orders_ten_years`` serves it; the CLI finds it through ``BACKFILL_MODULE``.
"""

from backfill_assets import BusinessCalendar
from backfill_assets.examples.orders.definitions import orders_definitions
from backfill_assets.examples.orders.domain import DEMO_TIMEZONE

from . import TEN_YEARS

CALENDAR = BusinessCalendar(DEMO_TIMEZONE, TEN_YEARS.first_day)

defs = orders_definitions(calendar=CALENDAR)
