"""What a gated asset's partitioning may be, and what to do instead when it is something else.

Gated assets are daily partitions of one ``BusinessCalendar``: a day is the unit a version covers, a request
freezes and a pointer serves. What users naturally reach for first — a Dagster partitions definition — is refused
when the definitions load, naming the asset and the way forward, never as a ``TypeError`` inside the library.
"""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.intervals import BusinessCalendar

_OTHER_GRAINS = (
    "gated assets are daily in the business calendar; keep {grain} asset an ordinary Dagster asset beside them "
    "(dg.Definitions.merge), or make the {unit} a column of a daily gated asset"
)
_DIMENSIONS = (
    "gated assets are partitioned by business day only; make {what} a column of the daily asset and audit it with "
    "unique_key(\"{column}\", ...)"
)


def check_partitioning(asset: str, calendar: object, partitions_def: object) -> None:
    """Refuse ``partitions_def=`` and a ``calendar`` that is not a ``BusinessCalendar``, saying what to write."""
    if partitions_def is not None:
        raise InvalidInput(f"{asset}: gated_asset takes no partitions_def; {_way_forward(partitions_def)}")
    if not isinstance(calendar, BusinessCalendar):
        given = type(calendar).__name__
        raise InvalidInput(f"{asset}: calendar must be a BusinessCalendar, not {given}; {_way_forward(calendar)}")


def _way_forward(partitioning: object) -> str:
    if isinstance(partitioning, dg.DailyPartitionsDefinition):
        start = partitioning.start.date().isoformat()
        return (f"its days are a BusinessCalendar: calendar=BusinessCalendar({partitioning.timezone or 'UTC'!r}, "
                f"{start!r})")
    if isinstance(partitioning, dg.HourlyPartitionsDefinition):
        return _OTHER_GRAINS.format(grain="an hourly", unit="hour")
    if isinstance(partitioning, dg.WeeklyPartitionsDefinition):
        return _OTHER_GRAINS.format(grain="a weekly", unit="week")
    if isinstance(partitioning, dg.MonthlyPartitionsDefinition):
        return _OTHER_GRAINS.format(grain="a monthly", unit="month")
    if isinstance(partitioning, dg.MultiPartitionsDefinition):
        others = [d.name for d in partitioning.partitions_defs
                  if not isinstance(d.partitions_def, dg.TimeWindowPartitionsDefinition)]
        column = others[0] if others else "region"
        return _DIMENSIONS.format(what=f"the {column} dimension", column=column)
    if isinstance(partitioning, (dg.StaticPartitionsDefinition, dg.DynamicPartitionsDefinition)):
        return _DIMENSIONS.format(what="the static key", column="<key column>")
    return "declare calendar=BusinessCalendar(\"<IANA timezone>\", \"<first day>\") (docs/ASSETS.md)"
