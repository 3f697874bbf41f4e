"""The orders code location, declared on the public API only.

``dagster dev -m backfill_assets.examples.orders.definitions`` (the repository's workspace.yaml names it too).
"""

from __future__ import annotations

import dagster as dg
import pandas as pd
from pydantic import Field

from backfill_assets import (
    AccessPolicy,
    BackfillAsset,
    BusinessCalendar,
    CleanupPolicy,
    backfill_definitions,
    gated_asset,
    matches_schema,
    row_count,
    side_effect_asset,
    totals_match,
    unique_key,
)
from backfill_assets.defects import with_defects

from . import transforms
from .domain import (
    CUSTOMER_SNAPSHOT_SCHEMA,
    DAILY_REVENUE_SCHEMA,
    DEMO_CALENDAR,
    GROUP,
    ORDER_FACTS_SCHEMA,
    RAW_ORDERS_SCHEMA,
    customers,
    expected_order_facts_totals,
    expected_revenue_totals,
    expected_snapshot_totals,
    revenue_tolerance,
    snapshot_tolerance,
)
from .resources import AlertSink, OrdersSource
from .source import seed  # noqa: F401 - `backfill-assets seed` fills this demo's source


# The fingerprint (taken before the extract) and the checks (after the write) share one summary of the source per
# attempt: the version's recorded fingerprint describes the very reading its count and totals were checked against,
# and a source that changed between that reading and the extract fails the checks.
def _source_rows(interval, orders_source: OrdersSource, run) -> int:
    return orders_source.summary(interval, run.version_id).rows


def _source_totals(interval, orders_source: OrdersSource, run) -> dict[str, float]:
    return {"amount": orders_source.summary(interval, run.version_id).amount_sum}


def _source_fingerprint(interval, orders_source: OrdersSource, run) -> str:
    return orders_source.summary(interval, run.version_id).fingerprint


class FxRates(dg.Config):
    """CNY per unit of each foreign currency: an FX correction is a backfill of order_facts with new rates."""

    usd_to_cny: float = Field(default=transforms.RATES_TO_CNY["USD"], gt=0, description="CNY per US dollar")
    eur_to_cny: float = Field(default=transforms.RATES_TO_CNY["EUR"], gt=0, description="CNY per euro")

    def to_cny(self) -> dict[str, float]:
        return {"CNY": 1.0, "USD": self.usd_to_cny, "EUR": self.eur_to_cny}


# Each asset is made for a calendar: the demo's (the module-level assets below), or one a benchmark chooses (its
# partitions must reach back as far as the days it backfills). The declarations are the same whatever the calendar.
def _raw_orders(calendar: BusinessCalendar) -> BackfillAsset:
    @gated_asset(
        calendar=calendar,
        primary_key=("order_id", "updated_at"),
        schema=RAW_ORDERS_SCHEMA,
        audits=[row_count(_source_rows), unique_key(), totals_match(_source_totals), matches_schema()],
        fingerprint=_source_fingerprint,
        owners=["team:ingestion"],
        group_name=GROUP,
    )
    def raw_orders(interval, orders_source: OrdersSource) -> pd.DataFrame:
        """Orders extracted from the source system for one business day."""
        return orders_source.system().extract(interval)

    return raw_orders


def _order_facts(calendar: BusinessCalendar, raw_orders: BackfillAsset) -> BackfillAsset:
    @gated_asset(
        calendar=calendar,
        deps=[raw_orders],
        primary_key=("order_id",),
        schema=ORDER_FACTS_SCHEMA,
        audits=[
            row_count(lambda raw_orders: int(raw_orders["order_id"].nunique())),
            unique_key(),
            totals_match(expected_order_facts_totals),
            matches_schema(),
        ],
        owners=["team:analytics"],
        group_name=GROUP,
        config=FxRates,
    )
    def order_facts(interval, raw_orders: pd.DataFrame, config: FxRates) -> pd.DataFrame:
        """One row per order, latest amendment, amounts in CNY."""
        return transforms.order_facts(raw_orders, interval.key, config.to_cny())

    return order_facts


def _daily_revenue(calendar: BusinessCalendar, order_facts: BackfillAsset) -> BackfillAsset:
    @gated_asset(
        calendar=calendar,
        deps=[order_facts],
        primary_key=("region",),
        schema=DAILY_REVENUE_SCHEMA,
        audits=[
            row_count(lambda order_facts: int(order_facts["region"].nunique())),
            unique_key(),
            totals_match(expected_revenue_totals, tolerance=revenue_tolerance),
            matches_schema(),
        ],
        owners=["team:finance"],
        group_name=GROUP,
    )
    def daily_revenue(interval, order_facts: pd.DataFrame) -> pd.DataFrame:
        """Revenue and order count per region for one business day."""
        return transforms.daily_revenue(order_facts, interval.key)

    return daily_revenue


def _customer_snapshot(calendar: BusinessCalendar, order_facts: BackfillAsset) -> BackfillAsset:
    @gated_asset(
        calendar=calendar,
        deps=[order_facts],
        depends_on_past=True,
        primary_key=("customer_id",),
        schema=CUSTOMER_SNAPSHOT_SCHEMA,
        audits=[
            row_count(lambda previous, order_facts: len(customers(previous, order_facts))),
            unique_key(),
            totals_match(expected_snapshot_totals, tolerance=snapshot_tolerance),
            matches_schema(),
        ],
        owners=["team:crm"],
        group_name=GROUP,
    )
    def customer_snapshot(interval, previous: pd.DataFrame | None, order_facts: pd.DataFrame) -> pd.DataFrame:
        """Cumulative per-customer totals as of the end of the business day."""
        start = transforms.empty_snapshot() if previous is None else previous
        return transforms.customer_snapshot(start, order_facts, interval.key)

    return customer_snapshot


def _send_alert(payload: dict, alert_sink: AlertSink) -> None:
    alert_sink.send(payload)


def _revenue_alert(calendar: BusinessCalendar, daily_revenue: BackfillAsset) -> BackfillAsset:
    @side_effect_asset(
        calendar=calendar,
        deps=[daily_revenue],
        deliver=_send_alert,
        owners=["team:finance"],
        group_name=GROUP,
    )
    def revenue_alert(interval, daily_revenue: pd.DataFrame) -> dict:
        """Sends the daily revenue summary to the external sink, once per published revenue version."""
        return transforms.revenue_alert_payload(daily_revenue, interval.key)

    return revenue_alert


def orders_assets(calendar: BusinessCalendar) -> tuple[BackfillAsset, ...]:
    """raw_orders, order_facts, daily_revenue, customer_snapshot and revenue_alert, partitioned by ``calendar``."""
    raw = _raw_orders(calendar)
    facts = _order_facts(calendar, raw)
    revenue = _daily_revenue(calendar, facts)
    return raw, facts, revenue, _customer_snapshot(calendar, facts), _revenue_alert(calendar, revenue)


DEMO_ASSETS = orders_assets(DEMO_CALENDAR)
raw_orders, order_facts, daily_revenue, customer_snapshot, revenue_alert = DEMO_ASSETS


def orders_definitions(
    executor: dg.ExecutorDefinition | None = None, access: AccessPolicy | None = None,
    cleanup: CleanupPolicy | None = None, calendar: BusinessCalendar = DEMO_CALENDAR,
) -> dg.Definitions:
    """The orders code location; ``executor`` runs its steps (``on_celery`` passes Celery's); ``access`` says who
    may approve side effects and overrides and decide handoffs besides the owners (none listed: anyone named),
    ``cleanup`` how long the ``backfill_cleanup`` sensor keeps non-current versions' files, ``calendar`` the
    assets' business days (the demo's unless a benchmark needs days before them).

    A demo: its data assets take deliberate defects (``with_defects``), so the demo and its tests make a blocking
    check fail for real; a production code location passes its assets as they are."""
    return backfill_definitions(
        assets=with_defects(*(DEMO_ASSETS if calendar == DEMO_CALENDAR else orders_assets(calendar))),
        resources={"orders_source": OrdersSource(), "alert_sink": AlertSink()},
        executor=executor,
        access=access,
        cleanup=cleanup,
    )


defs = orders_definitions()
