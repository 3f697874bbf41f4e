"""``clear``: Airflow's "clear task instances" as a request — which days a clear covers, and the request it makes.

Airflow clears the task instances of one logical date, optionally with every ``past`` and ``future`` one. Here
the days are the partitions' range: ``past`` reaches back to the calendar's first day, ``future`` forward to the
newest complete interval (a day still in progress has nothing to clear). The cells themselves come from an asset
selection resolved by Dagster, and the request built from both is an ordinary frozen request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.intervals import BusinessCalendar, parse_day
from backfill_assets.engine.model.request_input import RequestInput, RequestOptions, day_text
from backfill_assets.engine.model.request_model import ReprocessPolicy


@dataclass(frozen=True)
class ClearInput(RequestOptions):
    """A clear as asked: ``select`` in Dagster's asset selection syntax (``+daily_revenue``, ``order_facts+``,
    ``key:raw_orders or key:order_facts``); the days as ``partition_key`` (with ``past`` / ``future``) or
    ``from_day``..``to_day``; ``only_failed`` re-runs only the cells whose latest attempt failed. A cleared cell is
    re-run whatever its state (reprocess ``completed``), except one a queued or running run already writes. The
    request's options (``RequestOptions``) are keyword-only."""

    select: str
    partition_key: date | str | None = None
    past: bool = False
    future: bool = False
    from_day: date | str | None = None
    to_day: date | str | None = None
    only_failed: bool = False

    @property
    def reprocess(self) -> ReprocessPolicy:
        return ReprocessPolicy.FAILED if self.only_failed else ReprocessPolicy.COMPLETED

    def request_input(self, assets: Sequence[str], window: ClearWindow) -> RequestInput:
        """The request this clear makes: the selected assets over the window's days."""
        return RequestInput(assets=list(assets), from_day=window.first, to_day=window.last, reprocess=self.reprocess,
                            only_failed=self.only_failed, **self.options())


@dataclass(frozen=True)
class ClearWindow:
    """The inclusive day range a clear covers, and how it was asked for (shown by the dry run)."""

    first: str
    last: str
    asked: str


def clear_window(calendar: BusinessCalendar, newest_complete: str | None, asked: ClearInput) -> ClearWindow:
    """The days of a clear: ``partition_key`` with ``past``/``future``, or ``from_day``/``to_day``; never both."""
    if asked.partition_key is not None and (asked.from_day is not None or asked.to_day is not None):
        raise InvalidField("give either {partition_key} (with {past}/{future}) or {from_day}/{to_day}, not both")
    if asked.partition_key is None:
        if asked.past or asked.future:
            raise InvalidField("{past} and {future} extend {partition_key}; give {partition_key}")
        if asked.from_day is None or asked.to_day is None:
            raise InvalidField("name the days: {partition_key} (with {past}/{future}), or {from_day} and {to_day}")
        first, last = day_text(asked.from_day, "from_day"), day_text(asked.to_day, "to_day")
        return ClearWindow(first, last, f"{first}..{last}")
    partition = day_text(asked.partition_key, "partition_key")
    calendar.day_of_key(partition)  # not before the partitions' start
    if newest_complete is None or parse_day(partition) > parse_day(newest_complete):
        raise InvalidField("{partition_key} {value} is past the newest complete interval ({newest})",
                           value=partition, newest=newest_complete or "none yet")
    first = calendar.first_day.isoformat() if asked.past else partition
    last = newest_complete if asked.future else partition
    reach = [partition] + ["every earlier day"] * asked.past + ["every later day"] * asked.future
    return ClearWindow(first, last, " and ".join(reach))
