"""The one place the daily partitions definition is made."""

from datetime import date

import dagster as dg

from backfill_assets.core.domain import DEMO_FIRST_DAY, DEMO_TIMEZONE
from backfill_assets.core.intervals import BusinessCalendar

daily_partitions = dg.DailyPartitionsDefinition(start_date=DEMO_FIRST_DAY, timezone=DEMO_TIMEZONE, end_offset=0)

calendar = BusinessCalendar(DEMO_TIMEZONE, date.fromisoformat(DEMO_FIRST_DAY))
