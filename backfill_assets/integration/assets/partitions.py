"""The one place a business calendar becomes Dagster's daily partitions definition."""

from functools import lru_cache

import dagster as dg

from backfill_assets.engine.model.intervals import BusinessCalendar


@lru_cache(maxsize=None)
def daily_partitions_for(calendar: BusinessCalendar) -> dg.DailyPartitionsDefinition:
    # end_offset=0: today's interval has not ended, so it is not a partition yet (never computed early).
    return dg.DailyPartitionsDefinition(
        start_date=calendar.first_day.isoformat(), timezone=calendar.tz_name, end_offset=0
    )
