"""``clear``: Airflow's "clear task instances" as a request — which days a clear covers.

Airflow clears the task instances of one logical date, optionally with every ``past`` and ``future`` one. Here
the days are the partitions' range: ``--past`` reaches back to the calendar's first day, ``--future`` forward to
the newest complete interval (a day still in progress has nothing to clear). The cells themselves come from an
asset selection resolved by Dagster, and the request built from both is an ordinary frozen request.
"""

from __future__ import annotations

from dataclasses import dataclass

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.intervals import BusinessCalendar, parse_day


@dataclass(frozen=True)
class ClearWindow:
    """The inclusive day range a clear covers, and how it was asked for (shown by the dry run)."""

    first: str
    last: str
    asked: str


def clear_window(
    calendar: BusinessCalendar,
    newest_complete: str | None,
    *,
    partition: str | None = None,
    past: bool = False,
    future: bool = False,
    first: str | None = None,
    last: str | None = None,
) -> ClearWindow:
    """The days of a clear: ``--partition D`` with ``--past``/``--future``, or ``--from``/``--to``; never both."""
    if partition is not None and (first is not None or last is not None):
        raise InvalidInput("give either --partition (with --past/--future) or --from/--to, not both")
    if partition is None:
        if past or future:
            raise InvalidInput("--past and --future extend --partition DAY; give --partition")
        if first is None or last is None:
            raise InvalidInput("name the days: --partition DAY [--past] [--future], or --from DAY --to DAY")
        return ClearWindow(first, last, f"--from {first} --to {last}")
    calendar.day_of_key(partition)  # a date, and not before the partitions' start
    if newest_complete is None or parse_day(partition) > parse_day(newest_complete):
        raise InvalidInput(
            f"--partition {partition} is past the newest complete interval ({newest_complete or 'none yet'})"
        )
    window_first = calendar.first_day.isoformat() if past else partition
    window_last = newest_complete if future else partition
    asked = f"--partition {partition}" + (" --past" if past else "") + (" --future" if future else "")
    return ClearWindow(window_first, window_last, asked)
