"""Input at its bounds, generated: non-finite numbers through every door, and numeric ``backfill/*`` tags that are
not plain numbers.

A non-finite number in a conf is refused at each door (the CLI's ``--conf`` and the Launchpad's ``conf``: exit 2
with one ``error:`` line naming where it is, nothing created); a finite one is stored exactly. A frame under each
comparing audit fails whenever a number cannot be compared. A numeric tag is taken only as plain ASCII digits
within its bounds; anything else is one ``InvalidInput`` line naming the tag, wherever the tag is read.
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.plan.admission import admit, launch_policy, launch_tags_refusal
from backfill_assets.engine.plan.adoption import adopted_spec
from backfill_assets.engine.plan.pacing import paced_policy
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.wap.audit import check_business_totals, row_count
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from tests.orders import DEFS, GRAPH, run_partitions

from . import mode
from .bad_input_strategies import DAY, PROFILE, weird_text
from .fuzz_harness import Fuzz, run_property

NON_FINITE_TEXT = ["Infinity", "-Infinity", "NaN", "1e999", "-1e999", "1e400", "2e308", "-2E+308"]
UI = {T.DAGSTER_BACKFILL: "uibackfl"}


@pytest.fixture(scope="module")
def fuzz(module_envs, tmp_path_factory):
    env = module_envs("bounds")
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS]))
    cwd = tmp_path_factory.mktemp("cwd")
    return Fuzz({"sqlite": env}, [module_envs.base, cwd], cwd)


# ---- non-finite numbers -------------------------------------------------------------------------------------

finite = st.floats(min_value=0.001, max_value=1e6, allow_nan=False, allow_infinity=False)
non_finite = st.sampled_from(NON_FINITE_TEXT)


@st.composite
def confs(draw) -> tuple[str, bool]:
    """(conf text, whether it holds a non-finite number) — the number in a field, nested, or under the library's
    key."""
    usd = draw(st.one_of(finite.map(repr), non_finite))
    eur = draw(st.one_of(finite.map(repr), non_finite))
    where = draw(st.sampled_from(["fields", "nested", "window"]))
    if where == "fields":
        text = f'{{"{ORDER_FACTS}": {{"usd_to_cny": {usd}, "eur_to_cny": {eur}}}}}'
        bad = usd in NON_FINITE_TEXT or eur in NON_FINITE_TEXT
    elif where == "nested":
        text = f'{{"{ORDER_FACTS}": {{"defect_days": {{"{DAY}": [{usd}, {{"x": {eur}}}]}}}}}}'
        bad = True  # refused either way: a defect day takes a defect's name
    else:
        text = f'{{"handoff_window_seconds": {usd}}}'
        bad = True  # an integer of seconds, never a float
    return text, bad


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else 120))
def test_generated_non_finite_conf_numbers_are_refused_by_the_cli_naming_the_field(fuzz, trials):
    @PROFILE
    @given(case=confs())
    def prop(case):
        text, bad = case
        args = ["request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--conf", text, "--json"]
        result = fuzz.run("sqlite", args)
        holds_non_finite = any(word in text for word in NON_FINITE_TEXT)
        if result is None:
            assert bad, f"refused a finite conf {text}"
            return
        assert not holds_non_finite and not bad, f"accepted {text}"
        out = json.loads(result.stdout)
        assert out["conf"][ORDER_FACTS]["usd_to_cny"] == json.loads(text)[ORDER_FACTS]["usd_to_cny"]
        assert all(math.isfinite(v) for v in out["conf"][ORDER_FACTS].values() if isinstance(v, float))
        Ledger(fuzz.envs["sqlite"].catalog).cancel(out["request_id"])

    run_property(trials, "bad_input.non_finite", fuzz, prop)


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=600 if mode.SLOW else 120))
def test_generated_non_finite_conf_numbers_are_refused_by_the_launchpad(fuzz, trials):
    env = fuzz.envs["sqlite"]
    job = DEFS.resolve_job_def(REQUEST_JOB)

    # A Launchpad run is a whole in-process Dagster run: fewer examples than the CLI's.
    @settings(PROFILE, max_examples=max(10, mode.EXAMPLES // 20))
    @given(number=non_finite, field=st.sampled_from(["usd_to_cny", "eur_to_cny"]))
    def prop(number, field):
        fuzz.examples += 1
        env.activate()
        before = env.table_rows()
        conf = f'{{"{ORDER_FACTS}": {{"{field}": {number}}}}}'
        result = job.execute_in_process(
            run_config={"ops": {REQUEST_OP: {"config": {"assets": [ORDER_FACTS], "from_day": DAY, "to_day": DAY,
                                                        "conf": conf}}}},
            instance=env.instance, raise_on_error=False,
        )
        assert not result.success, f"the Launchpad accepted {conf}"
        [failure] = [e for e in result.all_events if e.is_step_failure]
        message = failure.step_failure_data.user_failure_data.description
        assert message.startswith(f"conf {ORDER_FACTS}.{field}: ") and "not a finite number" in message, message
        assert "\n" not in message and env.table_rows() == before

    run_property(trials, "bad_input.non_finite", fuzz, prop)


values = st.one_of(st.floats(), st.sampled_from([math.inf, -math.inf, math.nan, 1e308]))


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=300 if mode.SLOW else 60))
def test_generated_frames_under_each_comparing_audit_fail_when_a_number_cannot_be_compared(fuzz, trials):
    @PROFILE
    @given(column=st.lists(values, min_size=1, max_size=8), want=values, tolerance=values)
    def prop(column, want, tolerance):
        fuzz.examples += 1
        frame = pd.DataFrame({"amount": column})
        totals = check_business_totals(frame, {"amount": want}, tolerance)
        got = sum(v for v in column if not math.isnan(v))  # a missing value (NaN) is a null; may overflow to inf
        comparable = (all(not math.isinf(v) for v in column) and math.isfinite(got) and math.isfinite(want)
                      and math.isfinite(tolerance) and tolerance >= 0)
        if not comparable:
            assert totals.passed is False, (column, want, tolerance, totals)
        elif totals.passed:
            assert abs(float(frame["amount"].sum()) - want) <= tolerance
        # row_count: a non-finite expectation is a failure (run_audits records an audit that raises as failed)
        try:
            counted = row_count(lambda: want).evaluate(frame, {}, GRAPH[ORDER_FACTS]).passed
        except (OverflowError, ValueError):
            counted = False
        assert counted is (math.isfinite(want) and int(want) == len(frame))

    run_property(trials, "bad_input.non_finite", fuzz, prop)


# ---- numeric tags ------------------------------------------------------------------------------------------

tag_values = st.one_of(
    st.integers(-100, 200).map(str),
    st.integers(0, 64).flatmap(lambda n: st.sampled_from([f" {n}", f"{n} ", f"+{n}", f"-{n}", f"{n}.0", f"0{n}",
                                                          f"{n}_0", f"\t{n}", f"{n}\n", f"0x{n}"])),
    st.text(alphabet=st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=6),
    st.integers(17, 4400).map(lambda n: "1" * n),
    st.sampled_from(["²", "٣", "３", "𝟑", "Ⅲ", "½", "1e2", "inf", "NaN", "", " "]),
    weird_text,
)


def plain(value: str) -> int | None:
    return int(value) if re.fullmatch(r"[0-9]{1,18}", value) else None


@pytest.mark.timeout(mode.timeout(per_trial_seconds=0, fixed_seconds=300 if mode.SLOW else 60))
def test_generated_numeric_tags_are_taken_only_as_plain_numbers_within_bounds_wherever_they_are_read(
    fuzz, trials
):
    @PROFILE
    @given(value=tag_values, default=st.integers(1, M.MAX_ACTIVE_LIMIT))
    def prop(value, default):
        fuzz.examples += 1
        tags = {**UI, T.MAX_ACTIVE: value}
        number = plain(value)
        valid = value == "" or (number is not None and 1 <= number <= M.MAX_ACTIVE_LIMIT)
        try:
            policy = launch_policy(tags, default)
        except InvalidInput as exc:
            message = str(exc)
            assert not valid, f"refused {value!r}: {message}"
            assert message.startswith(f"tag {T.MAX_ACTIVE}=") and "\n" not in message and len(message) < 300
            assert launch_tags_refusal(tags) == str(InvalidInput(message))
        else:
            assert valid, f"accepted {value!r} as {policy.max_active}"
            assert policy.max_active == (default if value == "" else number)
        # the step's admission check on an asset whose days run one at a time: refused unless 1 (or no tag)
        try:
            admit(tags, GRAPH[CUSTOMER_SNAPSHOT], CellFacts())
        except InvalidInput as exc:
            assert str(exc).startswith(f"tag {T.MAX_ACTIVE}=") and "\n" not in str(exc)
            assert not valid or (number or 0) > 1
        else:
            assert valid and (value == "" or number == 1)
        # the adoption and the queue's pacing never raise over a tag: they take the defaults, the steps refuse it
        spec = adopted_spec(GRAPH, ((ORDER_FACTS, DAY),), {T.MAX_ACTIVE: value}, None, default)
        assert spec.max_active == (number if valid and number else default)
        slots, _ = paced_policy(tags, False, default)
        assert slots == (number if valid and number else default)

    run_property(trials, "bad_input.numeric_tags", fuzz, prop)
