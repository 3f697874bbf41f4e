"""The web-visits code location, on the public API only.

``dagster dev -m backfill_assets.examples.web_visits.definitions``.

What it exercises that the orders example does not: a DST timezone (2023-03-12 has 23 hours, 2023-11-05 has 25),
an asset with two upstreams (``conversions``), audits written by the user (``@audit``), and sources that change
after the fact (late events), so reconcile's "recomputed on current upstream" can say no.
"""

from __future__ import annotations

from typing import Optional

import dagster as dg
import pandas as pd

from backfill_assets import (
    FLOAT,
    INT,
    STRING,
    AuditResult,
    BusinessCalendar,
    Settings,
    audit,
    backfill_definitions,
    gated_asset,
    matches_schema,
    not_empty,
    row_count,
    unique_key,
)
from backfill_assets.defects import with_defects

from .source import Clickstream, open_clickstream, seed_days

CALENDAR = BusinessCalendar("America/New_York", "2023-03-01")
GROUP = "web"
SEED_FROM, SEED_TO = "2023-03-01", "2023-11-30"


class ClickstreamSource(dg.ConfigurableResource):
    """The clickstream database (``BACKFILL_SOURCE_URL``, default ``$DAGSTER_HOME/source.db``)."""

    url: Optional[str] = None

    def get(self) -> Clickstream:
        return open_clickstream(self.url or Settings.from_env().source_url)


@gated_asset(
    calendar=CALENDAR,
    schema={"view_id": STRING, "visitor_id": STRING, "page": STRING, "viewed_at": "timestamp"},
    audits=[
        row_count(lambda interval, clickstream: len(clickstream.get().views(interval))),
        unique_key("view_id"),
        matches_schema(),
    ],
    fingerprint=lambda interval, clickstream: clickstream.get().fingerprint("page_views", interval),
    group_name=GROUP,
    owners=["team:web"],
)
def page_views(interval, clickstream: ClickstreamSource) -> pd.DataFrame:
    """Every page view of the business day (New York time), as the clickstream holds it now."""
    return clickstream.get().views(interval)


@gated_asset(
    calendar=CALENDAR,
    schema={"signup_id": STRING, "visitor_id": STRING, "signed_up_at": "timestamp"},
    audits=[unique_key("signup_id"), matches_schema()],
    fingerprint=lambda interval, clickstream: clickstream.get().fingerprint("signups", interval),
    group_name=GROUP,
    owners=["team:web"],
)
def signups(interval, clickstream: ClickstreamSource) -> pd.DataFrame:
    """Every signup of the business day."""
    return clickstream.get().signups(interval)


@audit
def views_add_up(frame: pd.DataFrame, page_views: pd.DataFrame) -> AuditResult:
    """Every page view is counted in exactly one visit."""
    counted, viewed = int(frame["views"].sum()) if len(frame) else 0, len(page_views)
    return AuditResult(counted == viewed, f"{counted} views in visits, {viewed} page views",
                       {"views_in_visits": counted, "page_views": viewed})


@gated_asset(
    calendar=CALENDAR,
    deps=[page_views],
    schema={"visit_id": STRING, "visitor_id": STRING, "business_date": STRING, "views": INT, "pages": INT},
    audits=[
        unique_key("visit_id"),
        not_empty(),
        row_count(lambda page_views: int(page_views["visitor_id"].nunique())),
        views_add_up,
        matches_schema(),
    ],
    group_name=GROUP,
    owners=["team:growth"],
)
def visits(interval, page_views: pd.DataFrame) -> pd.DataFrame:
    """One visit per visitor and business day: how many views, of how many distinct pages."""
    grouped = page_views.groupby("visitor_id", sort=True).agg(views=("view_id", "count"), pages=("page", "nunique"))
    grouped = grouped.reset_index()
    return pd.DataFrame(
        {
            "visit_id": (grouped["visitor_id"] + "/" + interval.key).astype("string"),
            "visitor_id": grouped["visitor_id"].astype("string"),
            "business_date": pd.Series([interval.key] * len(grouped), dtype="string"),
            "views": grouped["views"].astype("int64"),
            "pages": grouped["pages"].astype("int64"),
        }
    )


@audit(name="rate_is_a_share", description="The conversion rate is between 0 and 1.")
def rate_is_a_share(frame: pd.DataFrame) -> tuple[bool, dict]:
    rate = float(frame["conversion_rate"].iloc[0]) if len(frame) else -1.0
    return 0.0 <= rate <= 1.0, {"conversion_rate": rate}


@gated_asset(
    calendar=CALENDAR,
    deps=[visits, signups],
    schema={"business_date": STRING, "visitors": INT, "signups": INT, "conversion_rate": FLOAT},
    audits=[unique_key("business_date"), rate_is_a_share, matches_schema()],
    group_name=GROUP,
    owners=["team:growth"],
)
def conversions(interval, visits: pd.DataFrame, signups: pd.DataFrame) -> pd.DataFrame:
    """Visitors, signups and the share of visitors who signed up, per business day (reads two upstreams)."""
    converted = len(set(signups["visitor_id"]) & set(visits["visitor_id"]))
    visitors = len(visits)
    return pd.DataFrame(
        {
            "business_date": pd.Series([interval.key], dtype="string"),
            "visitors": pd.Series([visitors], dtype="int64"),
            "signups": pd.Series([len(signups)], dtype="int64"),
            "conversion_rate": pd.Series([converted / visitors if visitors else 0.0], dtype="float64"),
        }
    )


@audit
def one_row_per_hour(frame: pd.DataFrame, interval) -> AuditResult:
    """One row per hour of the interval: 23 on the spring-forward day, 25 on the fall-back day."""
    hours = int(interval.duration.total_seconds() // 3600)
    return AuditResult(len(frame) == hours, f"{len(frame)} rows for a {hours}-hour day",
                       {"rows": len(frame), "hours_in_interval": hours})


@gated_asset(
    calendar=CALENDAR,
    deps=[page_views],
    schema={"hour_start_utc": "timestamp", "local_hour": STRING, "views": INT},
    audits=[unique_key("hour_start_utc"), one_row_per_hour, matches_schema()],
    group_name=GROUP,
    owners=["team:web"],
)
def hourly_traffic(interval, page_views: pd.DataFrame) -> pd.DataFrame:
    """Views per hour of the business day, every hour present (zero when quiet), labelled in local time."""
    hours = pd.date_range(interval.start_utc, interval.end_utc, freq="h", inclusive="left")
    counts = page_views["viewed_at"].dt.floor("h").value_counts() if len(page_views) else pd.Series(dtype="int64")
    local = hours.tz_convert(interval.start.tzinfo)
    return pd.DataFrame(
        {
            "hour_start_utc": hours,
            "local_hour": pd.Series(local.strftime("%H:00%z"), dtype="string"),
            "views": pd.Series([int(counts.get(h, 0)) for h in hours], dtype="int64"),
        }
    )


def seed(first: str, last: str, per_day: int) -> int:
    """``backfill-assets seed``: deterministic page views and signups for every business day."""
    return seed_days(Settings.from_env().source_url, CALENDAR, first, last, per_day)


def arrive_late(first: str, last: str, per_day: int) -> int:
    """Late events: more views and signups land in days already extracted (the source changed)."""
    return seed_days(Settings.from_env().source_url, CALENDAR, first, last, per_day, batch="late")


# A demo: its data assets take deliberate defects (backfill_assets.defects), so its tests make a check fail for real.
defs = backfill_definitions(
    assets=with_defects(page_views, signups, visits, conversions, hourly_traffic),
    resources={"clickstream": ClickstreamSource()},
)
