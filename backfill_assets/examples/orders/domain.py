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
    # Deliberately a different route than the transform (idxmax vs sort+tail) so the audit is independent. The
    # groups unsorted: only their sum is wanted, and sorting 20,000 order ids took half of this audit's time.
    if raw.empty:
        return raw
    return raw.loc[raw.groupby("order_id", sort=False)["updated_at"].idxmax()]


def expected_order_facts_totals(raw_orders: pd.DataFrame, config) -> dict[str, float]:
    """The CNY total at the rates the run was given (``config``: the asset's FxRates)."""
    import numpy as np  # here: the CLI imports this module's names without pandas
    import pandas as pd

    latest = _latest_amendments(raw_orders)
    if not len(latest):
        return {"amount_cny": 0.0}
    # Each order's rate by its currency's position among the rates (an unknown or missing currency: NaN, skipped
    # by the sum, as a mapping would give it); ~3x cheaper than mapping the text column through the dict.
    rates = config.to_cny()
    positions = pd.Index(list(rates)).get_indexer(latest["currency"])
    factors = np.append(np.array(list(rates.values()), dtype="float64"), np.nan)[positions]
    amounts = pd.Series(latest["amount"].to_numpy(dtype="float64", na_value=np.nan) * factors).round(2)
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
