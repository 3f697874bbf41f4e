"""Each cell is decided by Airflow's reprocess semantics on the facts of the moment (pure)."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.plan.planning import CREATE, FOLLOW, SKIP, CellFacts, decide
from backfill_assets.examples.orders.domain import ORDER_FACTS, REVENUE_ALERT
from tests.orders import GRAPH
from tests.specs import spec_of

NEVER_RUN = CellFacts()
FAILED_WITHOUT_VERSION = CellFacts(failed_run_without_version=True)
PUBLISHED = CellFacts("PUBLISHED", "v1")
REJECTED = CellFacts("REJECTED", "v2")
ABANDONED = CellFacts("ABANDONED", "v3")
IN_FLIGHT = CellFacts("PUBLISHED", "v1", in_flight_run_id="0123456789abcdef")


def _spec(reprocess: str, assets: str = ORDER_FACTS, **extra) -> M.RequestSpec:
    return spec_of(GRAPH, "2022-10-31", assets=assets, first="2022-10-01", last="2022-10-02",
                        reprocess=reprocess, requested_by="tester", **extra)


@pytest.mark.parametrize(
    "reprocess, facts, action",
    [
        ("none", NEVER_RUN, CREATE),
        ("none", FAILED_WITHOUT_VERSION, SKIP),  # Airflow: an interval that has a run is left alone
        ("none", PUBLISHED, SKIP),
        ("none", REJECTED, SKIP),
        ("failed", NEVER_RUN, CREATE),
        ("failed", FAILED_WITHOUT_VERSION, CREATE),
        ("failed", PUBLISHED, SKIP),
        ("failed", REJECTED, CREATE),
        ("failed", ABANDONED, CREATE),
        ("completed", NEVER_RUN, CREATE),
        ("completed", FAILED_WITHOUT_VERSION, CREATE),
        ("completed", PUBLISHED, CREATE),
        ("completed", REJECTED, CREATE),
        ("none", IN_FLIGHT, FOLLOW),
        ("failed", IN_FLIGHT, FOLLOW),
        ("completed", IN_FLIGHT, FOLLOW),
    ],
)
def test_reprocess_policy_decides_each_cell(reprocess, facts, action):
    assert decide(_spec(reprocess), GRAPH[ORDER_FACTS], facts).action == action


def test_the_reason_says_why_a_cell_with_a_failed_run_is_left_alone_or_rerun():
    assert "has a run" in decide(_spec("none"), GRAPH[ORDER_FACTS], FAILED_WITHOUT_VERSION).reason
    reason = decide(_spec("failed"), GRAPH[ORDER_FACTS], FAILED_WITHOUT_VERSION).reason
    assert "failed before writing a version" in reason
    assert decide(_spec("completed"), GRAPH[ORDER_FACTS], IN_FLIGHT).reason.startswith("in flight (run 01234567")


def test_a_side_effect_runs_only_when_authorized():
    assert decide(_spec("completed", assets=REVENUE_ALERT), GRAPH[REVENUE_ALERT], NEVER_RUN).label == (
        "skip: side effect not authorized"
    )
    authorized = _spec("none", assets=REVENUE_ALERT, allow_side_effects=REVENUE_ALERT, approved_by="lead")
    assert decide(authorized, GRAPH[REVENUE_ALERT], PUBLISHED).action == CREATE


def test_policies_statuses_and_decisions_are_enums_of_the_stored_strings():
    assert [p.value for p in M.ReprocessPolicy] == ["none", "failed", "completed"]
    assert [s.value for s in M.RequestStatus] == ["waiting", "open", "blocked", "completed", "failed", "cancelled",
                                                  "paused"]
    assert M.CellDecision("published") is M.PUBLISHED and M.PUBLISHED == "published"
    assert {M.PUBLISHED: 1}["published"] == 1  # rows read back as plain strings find enum keys


@pytest.mark.parametrize(
    "facts, action",
    [(NEVER_RUN, SKIP), (FAILED_WITHOUT_VERSION, CREATE), (PUBLISHED, SKIP), (REJECTED, CREATE),
     (ABANDONED, CREATE), (CellFacts("WRITING", "v4"), CREATE), (IN_FLIGHT, FOLLOW)],
)
def test_only_failed_creates_exactly_the_cells_whose_latest_attempt_failed(facts, action):
    assert decide(_spec("failed", only_failed=True), GRAPH[ORDER_FACTS], facts).action == action


@pytest.mark.parametrize("reprocess", ["none", "completed"])
def test_only_failed_goes_with_reprocess_failed_only(reprocess):
    with pytest.raises(InvalidInput, match="only_failed re-runs failed cells only"):
        _spec(reprocess, only_failed=True)
