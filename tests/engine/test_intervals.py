"""Business-day intervals: the timezone cut, DST lengths, key <-> interval round trips and strict parsing."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from itertools import pairwise

import pytest

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.intervals import BusinessCalendar, iso, parse_day

UTC = timezone.utc
SHANGHAI = BusinessCalendar("Asia/Shanghai", date(2022, 9, 1))
NEW_YORK = BusinessCalendar("America/New_York", date(2024, 1, 1))


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


# ---- the business-day cut ---------------------------------------------------------------------------------------


def test_order_at_1630_utc_belongs_to_the_next_shanghai_business_day():
    assert SHANGHAI.key_of(utc(2022, 10, 1, 16, 30)) == "2022-10-02"
    assert SHANGHAI.interval("2022-10-02").contains(utc(2022, 10, 1, 16, 30))
    assert not SHANGHAI.interval("2022-10-01").contains(utc(2022, 10, 1, 16, 30))


def test_order_one_second_before_shanghai_midnight_belongs_to_the_same_day():
    assert SHANGHAI.key_of(utc(2022, 10, 1, 15, 59, 59)) == "2022-10-01"
    assert SHANGHAI.interval("2022-10-01").contains(utc(2022, 10, 1, 15, 59, 59))


def test_shanghai_interval_is_half_open_and_starts_at_1600_utc_the_day_before():
    interval = SHANGHAI.interval("2022-10-02")
    assert interval.start_utc == utc(2022, 10, 1, 16)
    assert interval.end_utc == utc(2022, 10, 2, 16)
    assert interval.contains(utc(2022, 10, 1, 16))
    assert not interval.contains(utc(2022, 10, 2, 16))


def test_naive_timestamps_are_refused():
    with pytest.raises(InvalidInput):
        SHANGHAI.key_of(datetime(2022, 10, 1, 16, 30))
    with pytest.raises(InvalidInput):
        SHANGHAI.interval("2022-10-01").contains(datetime(2022, 10, 1, 16, 30))
    with pytest.raises(InvalidInput):
        iso(datetime(2022, 10, 1))


def test_iso_stores_every_time_as_utc_with_offset():
    local = SHANGHAI.interval("2022-10-02").start
    assert iso(local) == "2022-10-01T16:00:00.000000+00:00"
    assert iso(None) is None


# ---- DST --------------------------------------------------------------------------------------------------------


def test_new_york_spring_forward_day_is_23_hours():
    interval = NEW_YORK.interval("2024-03-10")
    assert interval.end_utc - interval.start_utc == timedelta(hours=23)
    assert interval.duration == timedelta(hours=23)
    assert interval.start_utc == utc(2024, 3, 10, 5)
    assert interval.end_utc == utc(2024, 3, 11, 4)


def test_new_york_fall_back_day_is_25_hours():
    interval = NEW_YORK.interval("2024-11-03")
    assert interval.end_utc - interval.start_utc == timedelta(hours=25)
    assert interval.duration == timedelta(hours=25)
    assert interval.start_utc == utc(2024, 11, 3, 4)
    assert interval.end_utc == utc(2024, 11, 4, 5)


@pytest.mark.parametrize("key", ["2024-03-09", "2024-03-11", "2024-11-02", "2024-11-04", "2024-07-01"])
def test_new_york_ordinary_days_are_24_hours(key):
    assert NEW_YORK.interval(key).duration == timedelta(hours=24)


@pytest.mark.parametrize(
    "calendar, first, last",
    [
        (NEW_YORK, "2024-03-01", "2024-03-20"),
        (NEW_YORK, "2024-10-25", "2024-11-10"),
        (SHANGHAI, "2022-09-25", "2022-10-10"),
    ],
    ids=["ny-spring", "ny-fall", "shanghai"],
)
def test_keys_and_intervals_round_trip_across_dst(calendar, first, last):
    keys = calendar.keys_between(first, last)
    for key, next_key in pairwise(keys):
        interval = calendar.interval(key)
        assert interval.key == key
        assert calendar.key_of(interval.start) == key
        assert calendar.key_of(interval.start_utc) == key
        assert calendar.key_of(interval.end_utc - timedelta(microseconds=1)) == key
        assert interval.end == calendar.interval(next_key).start
        assert calendar.next_key(key) == next_key
        assert calendar.previous_key(next_key) == key


@pytest.mark.parametrize(
    "zone",
    [
        "Asia/Shanghai",
        "America/New_York",
        "Europe/London",
        "Australia/Lord_Howe",  # 30-minute DST shift
        "America/Sao_Paulo",  # DST used to start at midnight: 00:00 did not exist
        "America/Havana",  # DST starts and ends at midnight
        "America/Santiago",  # DST ends at midnight
    ],
)
def test_consecutive_intervals_tile_time_without_gaps_or_overlaps(zone):
    calendar = BusinessCalendar(zone, date(2010, 1, 1))
    keys = calendar.keys_between("2010-01-01", "2024-12-31")
    intervals = [calendar.interval(key) for key in keys]
    for key, (interval, following) in zip(keys, pairwise(intervals), strict=False):
        assert interval.end_utc == following.start_utc, key
        assert timedelta(hours=22) <= interval.duration <= timedelta(hours=26), key
        assert calendar.key_of(interval.start_utc) == key
        assert calendar.key_of(interval.end_utc - timedelta(microseconds=1)) == key
    lengths = {interval.duration for interval in intervals}
    assert len(lengths) > 1 or zone == "Asia/Shanghai"  # the DST days really were in the range


# ---- ranges -----------------------------------------------------------------------------------------------------


def test_keys_between_is_inclusive_on_both_ends():
    assert SHANGHAI.keys_between("2022-10-30", "2022-11-02") == [
        "2022-10-30",
        "2022-10-31",
        "2022-11-01",
        "2022-11-02",
    ]
    assert SHANGHAI.keys_between("2022-10-01", "2022-10-01") == ["2022-10-01"]
    assert len(SHANGHAI.keys_between("2022-10-01", "2022-10-31")) == 31


def test_keys_between_refuses_a_range_that_ends_before_it_starts():
    with pytest.raises(InvalidInput, match="before"):
        SHANGHAI.keys_between("2022-10-02", "2022-10-01")


# ---- strict parsing ---------------------------------------------------------------------------------------------

MALFORMED = [
    "2022-13-01",
    "2022-02-30",
    "2022-00-10",
    "20221001",
    "",
    "2022-10-01T00:00",
    "2022-10-01 ",
    " 2022-10-01",
    "2022-10-01\n",
    "2022/10/01",
    "22-10-01",
    "2022-1-01",
    "\uff12\uff10\uff12\uff12-10-01",  # full-width digits
    "\u0662\u0660\u0662\u0662-\u0661\u0660-\u0660\u0661",  # Arabic-Indic digits
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_dates_are_refused(text):
    with pytest.raises(InvalidInput):
        parse_day(text)
    with pytest.raises(InvalidInput):
        SHANGHAI.interval(text)
    with pytest.raises(InvalidInput):
        SHANGHAI.keys_between(text, "2022-10-31")


@pytest.mark.parametrize("value", [None, 20221001, date(2022, 10, 1)])
def test_non_string_dates_are_refused(value):
    with pytest.raises(InvalidInput):
        parse_day(value)


def test_well_formed_dates_parse():
    assert parse_day("2024-02-29") == date(2024, 2, 29)


@pytest.mark.parametrize(
    "zone", ["Mars/Olympus_Mons", "", "../../etc/passwd", "/etc/localtime", "Asia/Shanghai\x00", "UTC+8"]
)
def test_unknown_timezone_is_refused(zone):
    with pytest.raises(InvalidInput):
        BusinessCalendar(zone, date(2022, 9, 1))


def test_dates_before_the_first_partition_are_refused():
    with pytest.raises(InvalidInput, match="before the first partition"):
        SHANGHAI.interval("2022-08-31")
    with pytest.raises(InvalidInput):
        SHANGHAI.keys_between("2022-08-31", "2022-09-02")
    assert SHANGHAI.interval("2022-09-01").key == "2022-09-01"
    assert SHANGHAI.previous_key("2022-09-01") is None


# ---- the production schedule's key ------------------------------------------------------------------------------


def test_newest_complete_key_is_the_last_business_day_that_has_fully_ended():
    # 2022-10-02T15:59:59Z is 23:59:59 on 2022-10-02 in Shanghai: that day is still open.
    assert SHANGHAI.newest_complete_key(utc(2022, 10, 2, 15, 59, 59)) == "2022-10-01"
    # One second later the Shanghai day 2022-10-02 has ended.
    assert SHANGHAI.newest_complete_key(utc(2022, 10, 2, 16, 0, 0)) == "2022-10-02"
    # Spring-forward day in New York ends at 04:00Z on 2024-03-11.
    assert NEW_YORK.newest_complete_key(utc(2024, 3, 11, 3, 59, 59)) == "2024-03-09"
    assert NEW_YORK.newest_complete_key(utc(2024, 3, 11, 4, 0, 0)) == "2024-03-10"


def test_newest_complete_key_is_none_before_the_first_partition_has_ended():
    assert SHANGHAI.newest_complete_key(utc(2022, 9, 1, 12)) is None
    assert SHANGHAI.newest_complete_key(utc(2022, 9, 1, 16)) == "2022-09-01"


def test_newest_complete_key_interval_has_ended_at_now():
    now = utc(2022, 10, 17, 3, 21)
    key = SHANGHAI.newest_complete_key(now)
    assert SHANGHAI.interval(key).end_utc <= now < SHANGHAI.interval(SHANGHAI.next_key(key)).end_utc
