"""Order in the definition: a request's order and max_active default to what its assets declare (strictest wins),
and an operator's contradicting choice is refused naming the asset (no Dagster, no database)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backfill_assets.engine.model.day_order import DayOrder, declared_pace
from backfill_assets.engine.model.errors import RefusedField
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.request_input import RequestInput, build_spec
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.orders import GRAPH

NEWEST = "2022-10-31"
# order_facts newest first only, one day at a time; daily_revenue forward only; raw_orders anything.
DECLARED = AssetGraph(GRAPH.calendar, [
    replace(s, order="backward", parallel_days=False) if s.name == ORDER_FACTS
    else replace(s, order="forward") if s.name == DAILY_REVENUE else s
    for s in GRAPH
])


def _spec(*assets: str, **options):
    return build_spec(DECLARED, NEWEST, RequestInput(assets=list(assets), from_day="2022-10-03",
                                                     to_day="2022-10-07", **options))


def test_a_request_defaults_to_what_its_assets_declare():
    assert (_spec(RAW_ORDERS).order, _spec(RAW_ORDERS).max_active, _spec(RAW_ORDERS).serial) == ("forward", 2, False)
    spec = _spec(RAW_ORDERS, ORDER_FACTS)  # strictest wins: backward and serial
    assert (spec.order, spec.max_active, spec.serial) == ("backward", 1, True)
    assert spec.ordered_partitions()[0] == "2022-10-07"
    assert _spec(DAILY_REVENUE).order == "forward"


def test_repeating_the_declaration_is_accepted_and_an_unconstrained_asset_takes_the_operators_choice():
    assert _spec(ORDER_FACTS, order="backward", max_active=1).order == "backward"
    spec = _spec(RAW_ORDERS, order="backward", max_active=5)
    assert (spec.order, spec.max_active) == ("backward", 5)


@pytest.mark.parametrize("assets, options, field, message", [
    ((ORDER_FACTS,), {"order": "forward"}, "order",
     f"order forward is refused: {ORDER_FACTS} declares order=backward, so the request runs backward"),
    ((RAW_ORDERS, ORDER_FACTS), {"max_active": 4}, "max_active",
     f"max_active 4 is refused: {ORDER_FACTS} declares parallel_days=False, so its days run one at a time"),
    ((CUSTOMER_SNAPSHOT,), {"max_active": 2}, "max_active",
     f"max_active 2 is refused: {CUSTOMER_SNAPSHOT} depends on the past"),
    ((DAILY_REVENUE,), {"order": "backward"}, "order",
     f"order backward is refused: {DAILY_REVENUE} declares order=forward"),
])
def test_a_contradicting_choice_is_refused_naming_the_asset_and_the_field(assets, options, field, message):
    with pytest.raises(RefusedField) as error:
        _spec(*assets, **options)
    assert error.value.fields[0] == field
    assert str(error.value).startswith(message)


def test_assets_fixing_opposite_orders_cannot_share_a_request():
    with pytest.raises(RefusedField) as error:
        _spec(ORDER_FACTS, DAILY_REVENUE)
    assert str(error.value) == (f"assets cannot run in one request: {DAILY_REVENUE} run(s) forward only and "
                                f"{ORDER_FACTS} backward only; ask for them in separate requests")
    # A request the library makes itself (a rollback's cascade) is not refused: forward, serial.
    pace = declared_pace(DECLARED, [ORDER_FACTS, DAILY_REVENUE], refuse_conflict=False)
    assert (pace.order, pace.serial) == (None, (ORDER_FACTS,))


def test_a_depends_on_past_asset_is_forward_and_serial_whatever_it_declares():
    pace = declared_pace(GRAPH, [CUSTOMER_SNAPSHOT, RAW_ORDERS])
    assert (pace.order, pace.serial, pace.default_max_active) == (DayOrder.FORWARD, (CUSTOMER_SNAPSHOT,), 1)
