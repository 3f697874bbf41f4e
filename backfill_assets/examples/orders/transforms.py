"""The demo transforms: pure functions of their inputs and the interval, never of "now"."""

from __future__ import annotations

from typing import Mapping

import pandas as pd

RATES_TO_CNY = {"CNY": 1.0, "USD": 7.1, "EUR": 7.8}


def order_facts(raw: pd.DataFrame, partition_key: str, rates: Mapping[str, float] = RATES_TO_CNY) -> pd.DataFrame:
    """One row per order: the latest amendment wins, amounts normalized to CNY at ``rates`` (CNY per unit)."""
    latest = raw.sort_values(["order_id", "updated_at"]).groupby("order_id", sort=True).tail(1)
    return pd.DataFrame(
        {
            "order_id": latest["order_id"].astype("string"),
            "customer_id": latest["customer_id"].astype("string"),
            "region": latest["region"].astype("string"),
            "currency": latest["currency"].astype("string"),
            "amount_cny": (latest["amount"] * latest["currency"].map(dict(rates))).round(2).astype("float64"),
            "created_at": latest["created_at"],
            "business_date": pd.Series([partition_key] * len(latest), dtype="string", index=latest.index),
        }
    ).reset_index(drop=True)


def daily_revenue(facts: pd.DataFrame, partition_key: str) -> pd.DataFrame:
    grouped = (
        facts.groupby("region", sort=True)
        .agg(orders=("order_id", "count"), revenue_cny=("amount_cny", "sum"))
        .reset_index()
    )
    return pd.DataFrame(
        {
            "business_date": pd.Series([partition_key] * len(grouped), dtype="string"),
            "region": grouped["region"].astype("string"),
            "orders": grouped["orders"].astype("int64"),
            "revenue_cny": grouped["revenue_cny"].round(2).astype("float64"),
        }
    )


SNAPSHOT_COLUMNS = [
    "customer_id",
    "first_order_date",
    "last_order_date",
    "lifetime_orders",
    "lifetime_revenue_cny",
    "as_of_date",
]


def empty_snapshot() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "customer_id": pd.Series(dtype="string"),
            "first_order_date": pd.Series(dtype="string"),
            "last_order_date": pd.Series(dtype="string"),
            "lifetime_orders": pd.Series(dtype="int64"),
            "lifetime_revenue_cny": pd.Series(dtype="float64"),
            "as_of_date": pd.Series(dtype="string"),
        }
    )


def customer_snapshot(previous: pd.DataFrame, facts: pd.DataFrame, partition_key: str) -> pd.DataFrame:
    """Cumulative per customer: yesterday's snapshot plus today's orders."""
    today = (
        facts.groupby("customer_id", sort=True)
        .agg(orders=("order_id", "count"), revenue=("amount_cny", "sum"))
        .reset_index()
    )
    merged = previous.drop(columns=["as_of_date"]).merge(today, on="customer_id", how="outer")
    had_orders = merged["orders"].notna()
    merged["first_order_date"] = merged["first_order_date"].fillna(partition_key)
    merged["last_order_date"] = merged["last_order_date"].where(~had_orders, partition_key)
    merged["lifetime_orders"] = merged["lifetime_orders"].fillna(0) + merged["orders"].fillna(0)
    lifetime = merged["lifetime_revenue_cny"].fillna(0.0) + merged["revenue"].fillna(0.0)
    merged["lifetime_revenue_cny"] = lifetime.round(2)
    out = pd.DataFrame(
        {
            "customer_id": merged["customer_id"].astype("string"),
            "first_order_date": merged["first_order_date"].astype("string"),
            "last_order_date": merged["last_order_date"].astype("string"),
            "lifetime_orders": merged["lifetime_orders"].astype("int64"),
            "lifetime_revenue_cny": merged["lifetime_revenue_cny"].astype("float64"),
            "as_of_date": pd.Series([partition_key] * len(merged), dtype="string"),
        }
    )
    return out.sort_values("customer_id").reset_index(drop=True)


def revenue_alert_payload(revenue: pd.DataFrame, partition_key: str) -> dict:
    top = revenue.sort_values("revenue_cny", ascending=False).head(1)
    return {
        "business_date": partition_key,
        "orders": int(revenue["orders"].sum()),
        "revenue_cny": round(float(revenue["revenue_cny"].sum()), 2),
        "top_region": None if top.empty else str(top["region"].iloc[0]),
    }
