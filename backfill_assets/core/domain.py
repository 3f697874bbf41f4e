"""The demo domain (docs/DESIGN.md §11) as plain data: asset names, lineage, keys, schemas and audit expectations."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Callable

import pandas as pd

from .intervals import BusinessCalendar
from .transforms import RATES_TO_CNY

RAW_ORDERS = "raw_orders"
ORDER_FACTS = "order_facts"
DAILY_REVENUE = "daily_revenue"
CUSTOMER_SNAPSHOT = "customer_snapshot"
REVENUE_ALERT = "revenue_alert"

DEMO_TIMEZONE = "Asia/Shanghai"
DEMO_FIRST_DAY = "2022-09-01"
DEMO_CALENDAR = BusinessCalendar(DEMO_TIMEZONE, date.fromisoformat(DEMO_FIRST_DAY))

STRING, FLOAT, INT, TIMESTAMP = "string", "float", "int", "timestamp"


@dataclass(frozen=True)
class Expectations:
    """What the audit compares the written version against, computed independently of the transform."""

    rows: int
    totals: dict[str, float] = field(default_factory=dict)
    tolerance: float = 0.01


@dataclass(frozen=True)
class AssetSpec:
    name: str
    description: str
    upstream: tuple[str, ...] = ()
    primary_key: tuple[str, ...] = ()
    schema: dict[str, str] = field(default_factory=dict)
    depends_on_past: bool = False
    side_effect: bool = False
    owners: tuple[str, ...] = ()
    group: str = "orders"

    @property
    def is_data_asset(self) -> bool:
        return not self.side_effect


def _latest_amendments(raw: pd.DataFrame) -> pd.DataFrame:
    # Deliberately a different route than the transform (idxmax vs sort+tail) so the audit is independent.
    if raw.empty:
        return raw
    return raw.loc[raw.groupby("order_id")["updated_at"].idxmax()]


def expect_order_facts(raw: pd.DataFrame) -> Expectations:
    latest = _latest_amendments(raw)
    amounts = (latest["amount"] * latest["currency"].map(RATES_TO_CNY)).round(2) if len(latest) else latest
    return Expectations(
        rows=int(raw["order_id"].nunique()),
        totals={"amount_cny": float(amounts.sum()) if len(latest) else 0.0},
        tolerance=0.01,
    )


def expect_daily_revenue(facts: pd.DataFrame) -> Expectations:
    regions = int(facts["region"].nunique())
    return Expectations(
        rows=regions,
        totals={"revenue_cny": float(facts["amount_cny"].sum()), "orders": float(len(facts))},
        tolerance=0.01 * max(regions, 1),
    )


def expect_customer_snapshot(previous: pd.DataFrame, facts: pd.DataFrame) -> Expectations:
    customers = set(previous["customer_id"].dropna()) | set(facts["customer_id"].dropna())
    return Expectations(
        rows=len(customers),
        totals={
            "lifetime_orders": float(previous["lifetime_orders"].sum() + len(facts)),
            "lifetime_revenue_cny": float(previous["lifetime_revenue_cny"].sum() + facts["amount_cny"].sum()),
        },
        tolerance=0.01 * max(len(customers), 1),
    )


SPECS: dict[str, AssetSpec] = {
    s.name: s
    for s in (
        AssetSpec(
            RAW_ORDERS,
            "Orders extracted from the source system for one business day.",
            primary_key=("order_id", "updated_at"),
            schema={
                "order_id": STRING,
                "customer_id": STRING,
                "region": STRING,
                "amount": FLOAT,
                "currency": STRING,
                "created_at": TIMESTAMP,
                "updated_at": TIMESTAMP,
            },
            owners=("team:ingestion",),
        ),
        AssetSpec(
            ORDER_FACTS,
            "One row per order, latest amendment, amounts in CNY.",
            upstream=(RAW_ORDERS,),
            primary_key=("order_id",),
            schema={
                "order_id": STRING,
                "customer_id": STRING,
                "region": STRING,
                "currency": STRING,
                "amount_cny": FLOAT,
                "created_at": TIMESTAMP,
                "business_date": STRING,
            },
            owners=("team:analytics",),
        ),
        AssetSpec(
            DAILY_REVENUE,
            "Revenue and order count per region for one business day.",
            upstream=(ORDER_FACTS,),
            primary_key=("region",),
            schema={"business_date": STRING, "region": STRING, "orders": INT, "revenue_cny": FLOAT},
            owners=("team:finance",),
        ),
        AssetSpec(
            CUSTOMER_SNAPSHOT,
            "Cumulative per-customer totals as of the end of the business day.",
            upstream=(ORDER_FACTS,),
            primary_key=("customer_id",),
            schema={
                "customer_id": STRING,
                "first_order_date": STRING,
                "last_order_date": STRING,
                "lifetime_orders": INT,
                "lifetime_revenue_cny": FLOAT,
                "as_of_date": STRING,
            },
            depends_on_past=True,
            owners=("team:crm",),
        ),
        AssetSpec(
            REVENUE_ALERT,
            "Sends the daily revenue summary to the external sink, once per published revenue version.",
            upstream=(DAILY_REVENUE,),
            side_effect=True,
            owners=("team:finance",),
        ),
    )
}

DATA_ASSETS: tuple[str, ...] = tuple(name for name, spec in SPECS.items() if spec.is_data_asset)
SIDE_EFFECT_ASSETS: tuple[str, ...] = tuple(name for name, spec in SPECS.items() if spec.side_effect)
# Assets whose days may be computed together in one batched (chunk) run: a depends-on-past asset needs its
# previous day published first, and a side effect runs alone under its own authorization.
BATCHABLE_ASSETS: tuple[str, ...] = tuple(name for name in DATA_ASSETS if not SPECS[name].depends_on_past)


def logical_type(dtype: object) -> str:
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return TIMESTAMP
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_integer_dtype(dtype):
        return INT
    if pd.api.types.is_float_dtype(dtype):
        return FLOAT
    if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
        return STRING
    return str(dtype)


def logical_schema(frame: pd.DataFrame) -> dict[str, str]:
    return {str(c): logical_type(t) for c, t in frame.dtypes.items()}


def downstream_of(asset: str) -> list[str]:
    """Assets that read ``asset`` directly, in definition order (which is a topological order)."""
    return [s.name for s in SPECS.values() if asset in s.upstream]


def topological(assets: list[str] | tuple[str, ...]) -> list[str]:
    order = list(SPECS)
    return sorted(assets, key=order.index)


ExpectationFn = Callable[..., Expectations]


def require_asset(name: object, data_only: bool = True) -> AssetSpec:
    """The spec of a known asset, or a one-line error naming the known ones."""
    from .errors import InvalidInput

    known = DATA_ASSETS if data_only else tuple(SPECS)
    if not isinstance(name, str) or name not in known:
        raise InvalidInput(f"unknown asset {name!r}; known: {', '.join(known)}")
    return SPECS[name]
