"""Data intervals: one daily partition is the half-open interval ``[start, end)`` of a business day.

All partition arithmetic lives here. Days are built from local midnights in the business timezone and then
converted to UTC, so a DST day is 23 h or 25 h long instead of "24 h from midnight".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from backfill_assets.engine.model.errors import InvalidField, InvalidInput, quoted

PARTITION_KEY_FORMAT = "%Y-%m-%d"
_FIRST_SUPPORTED_DAY = date.min + timedelta(days=1)
_LAST_SUPPORTED_DAY = date.max - timedelta(days=1)
_KEY_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")  # ASCII digits only: \d also matches e.g. full-width digits


def load_timezone(name: str) -> ZoneInfo:
    if not isinstance(name, str) or not name or "\x00" in name or ".." in name or name.startswith("/"):
        raise InvalidInput(f"unknown timezone {quoted(name)}")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise InvalidInput(f"unknown timezone {quoted(name)}") from exc


def parse_day(text: object, what: str = "date") -> date:
    """Parse ``YYYY-MM-DD`` strictly (no times, no other formats). ``what`` is plain text ("partition key") or an
    input field's placeholder ("{from_day}", see ``InvalidField``)."""
    if not isinstance(text, str) or not _KEY_RE.fullmatch(text):
        raise InvalidField(what + " {value!r} is not a date of the form YYYY-MM-DD", value=text)
    try:
        return datetime.strptime(text, PARTITION_KEY_FORMAT).date()
    except ValueError as exc:
        raise InvalidField(what + " {value!r} is not a valid calendar date", value=text) from exc


@dataclass(frozen=True)
class Interval:
    """One business day as a data interval; ``start``/``end`` are timezone-aware in the business zone."""

    key: str
    start: datetime
    end: datetime

    @property
    def start_utc(self) -> datetime:
        return self.start.astimezone(timezone.utc)

    @property
    def end_utc(self) -> datetime:
        return self.end.astimezone(timezone.utc)

    @property
    def duration(self) -> timedelta:
        # Subtract in UTC: same-zone wall-clock subtraction reports "1 day" for a 23 h DST day.
        return self.end_utc - self.start_utc

    def contains(self, ts: datetime) -> bool:
        if ts.tzinfo is None:
            raise InvalidInput(f"timestamp {ts.isoformat()} has no timezone")
        return self.start_utc <= ts.astimezone(timezone.utc) < self.end_utc

    @property
    def label(self) -> str:
        """How messages name the interval: its key and bounds in the business timezone, with offsets (so a 23-
        or 25-hour DST day is visible as such)."""
        zone = getattr(self.start.tzinfo, "key", None) or str(self.start.tzinfo)
        return f"{self.key} [{self.start.isoformat()}, {self.end.isoformat()}) {zone}"

    def as_dict(self) -> dict[str, str]:
        return {
            "partition_key": self.key,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "start_utc": self.start_utc.isoformat(),
            "end_utc": self.end_utc.isoformat(),
        }


@dataclass(frozen=True, init=False)
class BusinessCalendar:
    """Daily partitions in ``tz`` beginning at ``first_day`` (a date or ``YYYY-MM-DD``).

    ``BusinessCalendar("America/New_York", "2023-01-01")``: a day is local midnight to local midnight, so a DST
    change gives a 23- or 25-hour interval.
    """

    tz_name: str
    first_day: date

    def __init__(self, tz_name: str, first_day: date | str) -> None:  # the text form too, as the docstring says
        object.__setattr__(self, "tz_name", tz_name)
        object.__setattr__(self, "first_day", first_day)
        self.__post_init__()

    def __post_init__(self) -> None:
        load_timezone(self.tz_name)
        if isinstance(self.first_day, str):
            object.__setattr__(self, "first_day", parse_day(self.first_day, "calendar start"))
        elif not isinstance(self.first_day, date):
            raise InvalidInput(f"calendar start {self.first_day!r} is not a date")

    @property
    def tz(self) -> ZoneInfo:
        return load_timezone(self.tz_name)

    def local_midnight(self, day: date) -> datetime:
        # fold=0 at midnight is unambiguous for every zone that shifts at 02:00 or later.
        return datetime.combine(day, time(0, 0), tzinfo=self.tz)

    def interval(self, key: str) -> Interval:
        day = self.day_of_key(key)
        start = self.local_midnight(day)
        end = self.local_midnight(day + timedelta(days=1))
        return Interval(key=key, start=start, end=end)

    def day_of_key(self, key: str) -> date:
        day = parse_day(key, "partition key")
        if day < self.first_day:
            raise InvalidInput(f"partition {key} is before the first partition {self.first_day.isoformat()}")
        if not _FIRST_SUPPORTED_DAY <= day <= _LAST_SUPPORTED_DAY:
            # Its interval (or the UTC form of it) would fall outside what datetime can represent.
            raise InvalidInput(f"partition {key} is outside the supported days 0001-01-02..9999-12-30")
        return day

    def key_of(self, ts: datetime) -> str:
        """The business day a timestamp belongs to (e.g. 2022-10-01T16:30Z is 2022-10-02 in Shanghai)."""
        if ts.tzinfo is None:
            raise InvalidInput(f"timestamp {ts.isoformat()} has no timezone")
        return ts.astimezone(self.tz).date().isoformat()

    def newest_complete_key(self, now: datetime) -> str | None:
        """The last business day whose interval has fully ended at ``now``."""
        today_local = now.astimezone(self.tz).date()
        newest = today_local - timedelta(days=1)
        if newest < self.first_day:
            return None
        return newest.isoformat()

    def keys_between(self, first: str, last: str) -> list[str]:
        """Inclusive range of partition keys, validated."""
        a, b = self.day_of_key(first), self.day_of_key(last)
        if b < a:
            raise InvalidField("{to_day} {last} is before {from_day} {first}", last=last, first=first)
        return [(a + timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]

    def previous_key(self, key: str) -> str | None:
        day = self.day_of_key(key) - timedelta(days=1)
        return None if day < self.first_day else day.isoformat()

    def next_key(self, key: str) -> str:
        return (self.day_of_key(key) + timedelta(days=1)).isoformat()


def days_between(first: str, last: str) -> list[str]:
    """Every day from ``first`` through ``last`` (inclusive), as partition keys; no calendar bounds applied."""
    a, b = parse_day(first), parse_day(last)
    return [(a + timedelta(days=i)).isoformat() for i in range(max((b - a).days + 1, 0))]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def in_zone(stored: str | None, tz: ZoneInfo) -> str | None:
    """A stored UTC ISO time shown in the business timezone with its offset (``2022-10-17T00:00:00+08:00``)."""
    if not stored:
        return None
    return datetime.fromisoformat(stored).astimezone(tz).isoformat(timespec="seconds")


@overload
def iso(ts: datetime) -> str: ...


@overload
def iso(ts: None) -> None: ...


@overload
def iso(ts: datetime | None) -> str | None: ...


def iso(ts: datetime | None) -> str | None:
    """UTC ISO-8601 with offset, the one stored form of every time."""
    if ts is None:
        return None
    if ts.tzinfo is None:
        raise InvalidInput(f"timestamp {ts.isoformat()} has no timezone")
    return ts.astimezone(timezone.utc).isoformat(timespec="microseconds")
