"""How each demo asset computes one interval from published inputs, plus its audit expectations."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from . import transforms
from .domain import (
    CUSTOMER_SNAPSHOT,
    DAILY_REVENUE,
    ORDER_FACTS,
    RAW_ORDERS,
    Expectations,
    expect_customer_snapshot,
    expect_daily_revenue,
    expect_order_facts,
)
from .errors import InvalidInput
from .gate import Gate, NotPublished
from .intervals import BusinessCalendar
from .source import SourceSystem


@dataclass(frozen=True)
class Computed:
    frame: pd.DataFrame
    expected: Expectations
    source_fingerprint: str | None = None


def compute(gate: Gate, calendar: BusinessCalendar, source: SourceSystem) -> Computed:
    asset = gate.spec.name
    key = gate.identity.partition_key
    if asset == RAW_ORDERS:
        interval = calendar.interval(key)
        summary = source.summary(interval)
        frame = source.extract(interval)
        return Computed(frame, Expectations(summary.rows, {"amount": summary.amount_sum}), summary.fingerprint)
    if asset == ORDER_FACTS:
        raw = gate.read_published(RAW_ORDERS, key)
        return Computed(transforms.order_facts(raw, key), expect_order_facts(raw))
    if asset == DAILY_REVENUE:
        facts = gate.read_published(ORDER_FACTS, key)
        return Computed(transforms.daily_revenue(facts, key), expect_daily_revenue(facts))
    if asset == CUSTOMER_SNAPSHOT:
        facts = gate.read_published(ORDER_FACTS, key)
        previous_key = calendar.previous_key(key)
        if previous_key is None:
            previous = transforms.empty_snapshot()
        else:
            previous = gate.read_published(CUSTOMER_SNAPSHOT, previous_key, required=False)
            if previous is None:
                raise NotPublished(
                    f"{CUSTOMER_SNAPSHOT} depends on its previous day: {previous_key} has no published version"
                )
        return Computed(
            transforms.customer_snapshot(previous, facts, key), expect_customer_snapshot(previous, facts)
        )
    raise InvalidInput(f"unknown data asset {asset!r}")
