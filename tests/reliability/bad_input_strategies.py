"""The generated inputs of the bad-input suite (``test_bad_input.py``): path tricks, odd text, names, dates and JSON.
Built with hypothesis; no test here."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from backfill_assets.engine.model.intervals import utc_now
from tests.orders import CALENDAR as calendar
from tests.orders import GRAPH

from . import mode

DAY = "2022-09-01"
FIRST_DAY = date(2022, 9, 1)

PROFILE = settings(
    max_examples=mode.EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# ---- strategies ---------------------------------------------------------------------------------------------

PATH_TRICKS = [
    "", " ", ".", "..", "../", "../..", "../../etc/passwd", "/etc/passwd", "/", "\\", "a/../../b", "..\\..\\x",
    "%2e%2e%2f", "~", "~/x", "./x", "date=2022-09-01/../../x", "2022-09-01/../..", "2022-09-01/", "C:\\x",
    "file:///etc/passwd", "s3://bucket/x", "memory://x", "\u2024\u2024/x", "\uff0e\uff0e\uff0fx", "x\x00y",
    "2022-09-01\x00", "2022-09-01\n", "\t2022-09-01", "2022\u200b-09-01",
    "\uff12\uff10\uff12\uff12-\uff10\uff19-\uff10\uff11",
    "\u0662\u0660\u0662\u0662-\u0660\u0669-\u0660\u0661", "2022-09-01\udcff", "\udc80\udcff", "order_facts\x1b[31m",
    "ORDER_FACTS", "order-facts", "order_facts ", "raw_orders/../order_facts", "a" * 300, "é", "\u202e", "\x7f",
    "CON", "NUL", "\r\n", "${HOME}", "$(id)", "`id`", "'; DROP TABLE versions; --", "%s%s%n",
]
SURROGATES = st.sampled_from(["\udc80", "\udcff", "\ud800"])
weird_text = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(list("./\\\x00\n\r\t-_:=+ ")), SURROGATES), max_size=40
)
names = st.one_of(
    st.sampled_from(PATH_TRICKS),
    st.sampled_from(sorted(GRAPH.names)),
    weird_text,
    st.builds(lambda n, i, c: n[:i] + c + n[i:], st.sampled_from(sorted(GRAPH.names)), st.integers(0, 20),
              st.sampled_from(["/", "..", "\x00", "\n", "é", " ", "\\", "%"])),
)


def iso_days(lo: date, hi: date):
    return st.dates(min_value=lo, max_value=hi).map(date.isoformat)


NEWEST = calendar.newest_complete_key(utc_now())
dates = st.one_of(
    iso_days(FIRST_DAY, date(2022, 9, 12)),
    iso_days(date(1, 1, 1), date(9999, 12, 31)),
    iso_days(FIRST_DAY - timedelta(days=5), FIRST_DAY + timedelta(days=5)),
    st.sampled_from(["2022-02-29", "2022-09-31", "2022-13-01", "2022-00-10", "0000-01-01", "9999-12-31",
                     "2022-9-1", "20220901", "2022/09/01", "2022-09-01T00:00", "2022-09-01 00:00", "01-09-2022",
                     "2022-09-01Z", "+2022-09-01", "-2022-09-01", "2022-09-01\n", NEWEST or "2022-09-01"]),
    st.sampled_from(PATH_TRICKS),
    weird_text,
)


def json_values(max_leaves: int = 30):
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
    return st.recursive(
        scalars,
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
        max_leaves=max_leaves,
    )


def nested(depth: int, inner: str = "1") -> str:
    text = inner
    for i in range(depth):
        text = f'{{"handoff_window_seconds": {text}}}' if i % 2 else f"[{text}]"
    return text
