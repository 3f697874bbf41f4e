"""The orders domain as plain data: asset names, calendar, schemas, and the audits' independent expectations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from backfill_assets import FLOAT, INT, STRING, TIMESTAMP, BusinessCalendar

if TYPE_CHECKING:  # the expectations take frames; the names and the calendar need no pandas (the CLI imports them)
    import pandas as pd

RAW_ORDERS = "raw_orders"
ORDER_FACTS = "order_facts"
DAILY_REVENUE = "daily_revenue"
CUSTOMER_SNAPSHOT = "customer_snapshot"
REVENUE_ALERT = "revenue_alert"
ASSETS = (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE, CUSTOMER_SNAPSHOT, REVENUE_ALERT)
DATA_ASSETS = ASSETS[:-1]

DEMO_TIMEZONE = "Asia/Shanghai"
DEMO_FIRST_DAY = "2022-09-01"
DEMO_CALENDAR = BusinessCalendar(DEMO_TIMEZONE, DEMO_FIRST_DAY)
GROUP = "orders"

RAW_ORDERS_SCHEMA = {
    "order_id": STRING,
    "customer_id": STRING,
    "region": STRING,
    "amount": FLOAT,
    "currency": STRING,
    "created_at": TIMESTAMP,
    "updated_at": TIMESTAMP,
}
ORDER_FACTS_SCHEMA = {
    "order_id": STRING,
    "customer_id": STRING,
    "region": STRING,
    "currency": STRING,
    "amount_cny": FLOAT,
    "created_at": TIMESTAMP,
    "business_date": STRING,
}
DAILY_REVENUE_SCHEMA = {"business_date": STRING, "region": STRING, "orders": INT, "revenue_cny": FLOAT}
CUSTOMER_SNAPSHOT_SCHEMA = {
    "customer_id": STRING,
    "first_order_date": STRING,
    "last_order_date": STRING,
    "lifetime_orders": INT,
    "lifetime_revenue_cny": FLOAT,
    "as_of_date": STRING,
}


def _latest_amendments(raw: pd.DataFrame) -> pd.DataFrame:
    # Deliberately a different route than the transform (idxmax vs sort+tail) so the audit is independent.
    if raw.empty:
        return raw
    return raw.loc[raw.groupby("order_id")["updated_at"].idxmax()]


def expected_order_facts_totals(raw_orders: pd.DataFrame, config) -> dict[str, float]:
    """The CNY total at the rates the run was given (``config``: the asset's FxRates)."""
    latest = _latest_amendments(raw_orders)
    if not len(latest):
        return {"amount_cny": 0.0}
    amounts = (latest["amount"] * latest["currency"].map(config.to_cny())).round(2)
    return {"amount_cny": float(amounts.sum())}


def expected_revenue_totals(order_facts: pd.DataFrame) -> dict[str, float]:
    return {"revenue_cny": float(order_facts["amount_cny"].sum()), "orders": float(len(order_facts))}


def revenue_tolerance(order_facts: pd.DataFrame) -> float:
    return 0.01 * max(int(order_facts["region"].nunique()), 1)  # one rounding per region


def customers(previous: pd.DataFrame | None, order_facts: pd.DataFrame) -> set:
    known = set(previous["customer_id"].dropna()) if previous is not None else set()
    return known | set(order_facts["customer_id"].dropna())


def expected_snapshot_totals(previous: pd.DataFrame | None, order_facts: pd.DataFrame) -> dict[str, float]:
    lifetime_orders = float(previous["lifetime_orders"].sum()) if previous is not None else 0.0
    lifetime_revenue = float(previous["lifetime_revenue_cny"].sum()) if previous is not None else 0.0
    return {
        "lifetime_orders": lifetime_orders + len(order_facts),
        "lifetime_revenue_cny": lifetime_revenue + float(order_facts["amount_cny"].sum()),
    }


def snapshot_tolerance(previous: pd.DataFrame | None, order_facts: pd.DataFrame) -> float:
    return 0.01 * max(len(customers(previous, order_facts)), 1)
