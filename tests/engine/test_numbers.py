"""Numbers a user gives (a conf's floats, a run tag's digits) and the audits that compare numbers: what cannot be
compared fails, and what is not a plain number is refused in one line naming where it came from."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidField, InvalidInput, quoted
from backfill_assets.engine.model.numbers import require_finite, whole_number
from backfill_assets.engine.model.request_input import check_conf, parse_conf_text
from backfill_assets.engine.plan.admission import admit, launch_policy, launch_tags_refusal
from backfill_assets.engine.plan.adoption import adopted_spec
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.wap.audit import check_business_totals
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS
from tests.orders import GRAPH

INF, NAN = math.inf, math.nan
UI = {T.DAGSTER_BACKFILL: "uibackfl"}
NOT_PLAIN = ["²", "٣", "３", " 3", "3 ", "+3", "-1", "1_0", "3.0", "0x3", "1" + "0" * 4400, "9" * 19, "", "\x00"]


@pytest.mark.parametrize("text", ['{"order_facts": {"usd_to_cny": Infinity}}',
                                  '{"order_facts": {"usd_to_cny": -Infinity}}',
                                  '{"order_facts": {"usd_to_cny": NaN}}', '{"order_facts": {"usd_to_cny": 1e999}}',
                                  '{"order_facts": {"defect_days": {"x": [1, -1e400]}}}'])
def test_a_conf_with_a_non_finite_number_is_refused_naming_where_it_is(text):
    with pytest.raises(InvalidField) as refused:
        parse_conf_text(text)
    message = refused.value.worded(lambda f: f"--{f}")
    assert message.startswith(f"--conf {ORDER_FACTS}.") and "is not a finite number" in message, message
    assert "\n" not in message


def test_a_python_callers_conf_is_held_to_the_same_rule():
    with pytest.raises(InvalidField, match="order_facts.usd_to_cny: inf is not a finite number"):
        check_conf({ORDER_FACTS: {"usd_to_cny": float("inf")}})
    assert check_conf({ORDER_FACTS: {"usd_to_cny": 7.3}}) == {ORDER_FACTS: {"usd_to_cny": 7.3}}
    assert require_finite([1, 2.5, {"a": -0.0}], "x") == [1, 2.5, {"a": -0.0}]


@pytest.mark.parametrize("values, want, tolerance", [
    ([INF, -INF], NAN, 0.01), ([1e308, 1e308], INF, 0.01),
    (INF, INF, 0.01), (NAN, 10.0, 0.01), (10.0, NAN, 0.01), (-INF, -INF, 0.01), (10.0, 10.0, NAN),
    (10.0, 10.0, INF), (10.0, INF, 0.01),
])
def test_business_totals_fail_when_a_number_cannot_be_compared(values, want, tolerance):
    frame = pd.DataFrame({"amount": values if isinstance(values, list) else [values]})
    outcome = check_business_totals(frame, {"amount": want}, tolerance)
    assert outcome.passed is False, outcome


def test_business_totals_fail_on_an_infinite_value_even_when_the_expectation_agrees():
    frame = pd.DataFrame({"amount": [INF, 1.0, INF]})  # an expectation from the same rows agrees: inf
    outcome = check_business_totals(frame, {"amount": INF}, 0.01)
    assert outcome.passed is False and "amount holds 2 infinite value(s)" in outcome.description


def test_business_totals_still_pass_finite_agreeing_totals_and_treat_a_missing_value_as_null():
    frame = pd.DataFrame({"amount": [1.0, None, 2.5], "n": [1, 2, 3]})
    assert check_business_totals(frame, {"amount": 3.5, "n": 6.0}, 0.01).passed is True


@pytest.mark.parametrize("value", NOT_PLAIN)
def test_a_numeric_launch_tag_that_is_not_plain_ascii_digits_is_refused_naming_the_tag(value):
    with pytest.raises(InvalidInput) as refused:
        launch_policy({**UI, T.MAX_ACTIVE: value}) if value else whole_number(value, f"tag {T.MAX_ACTIVE}", 1, 64)
    message = str(refused.value)
    assert message.startswith(f"tag {T.MAX_ACTIVE}=") and len(message) < 300 and "\n" not in message, message
    if value:
        assert launch_tags_refusal({**UI, T.MAX_ACTIVE: value}) == message
        # the step's admission check and the adoption refuse it the same way, never with a ValueError
        with pytest.raises(InvalidInput, match=f"tag {T.MAX_ACTIVE}="):
            admit({**UI, T.MAX_ACTIVE: value}, GRAPH[CUSTOMER_SNAPSHOT], CellFacts())
        spec = adopted_spec(GRAPH, ((ORDER_FACTS, "2022-09-01"),), {T.MAX_ACTIVE: value}, None, 2)
        assert spec.max_active == 2


def test_plain_numeric_tags_within_bounds_are_taken():
    assert launch_policy({**UI, T.MAX_ACTIVE: "07"}).max_active == 7
    assert whole_number("64", "tag x", 1, 64) == 64
    with pytest.raises(InvalidInput, match="from 1 to 64"):
        whole_number("65", "tag x", 1, 64)


def test_an_error_quotes_a_bounded_prefix_of_the_input():
    huge = "x" * 1_000_000
    assert quoted(huge) == f"{'x' * 80!r}… (1000000 characters)"
    assert quoted("short") == "'short'"
    with pytest.raises(InvalidField) as refused:
        check_conf({"handoff_window_seconds": huge})
    assert len(str(refused.value)) < 300
    field = InvalidField("{requested_by} {value!r} is bad; allowed: {allowed}", value=huge, allowed=huge)
    assert len(str(field)) < 400 and "(1000000 characters)" in str(field)
