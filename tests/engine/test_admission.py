"""The admission check of a backfill launched from Dagster: the same decision as a request's driver, from the
backfill's launch tags; the adoption sensor turns its skips into skipped cells with the reason."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Cell, CellOrigin
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.plan.admission import admit, is_launched_from_dagster, launch_policy
from backfill_assets.engine.plan.adoption import AdoptedRun, track_adopted
from backfill_assets.engine.plan.driver_tick import RunView
from backfill_assets.engine.plan.planning import CREATE, SKIP, CellFacts
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from tests.orders import GRAPH

UI = {T.DAGSTER_BACKFILL: "abcdefgh"}
PUBLISHED = CellFacts("PUBLISHED", "v1")
REJECTED = CellFacts("REJECTED", "v1")


def test_only_runs_of_a_backfill_launched_from_dagster_are_checked():
    assert is_launched_from_dagster(UI)
    assert not is_launched_from_dagster({**UI, T.REQUEST_ID: "req-1"})  # our driver's own runs
    assert not is_launched_from_dagster({})


@pytest.mark.parametrize("value", ["", None])
def test_without_the_tag_a_dagster_backfill_recomputes_as_dagster_does(value):
    tags = UI if value is None else {**UI, T.REPROCESS: value}
    assert launch_policy(tags).reprocess == M.ReprocessPolicy.COMPLETED
    assert admit(tags, GRAPH[ORDER_FACTS], PUBLISHED).action == CREATE


@pytest.mark.parametrize("value", ["FAILED", "all", "none ", "failed,none"])
def test_an_unknown_policy_is_refused_naming_the_tag(value):
    with pytest.raises(InvalidInput, match=f"tag {T.REPROCESS}="):
        launch_policy({**UI, T.REPROCESS: value})


@pytest.mark.parametrize(
    "policy, facts, action",
    [
        ("failed", PUBLISHED, SKIP),
        ("failed", REJECTED, CREATE),
        ("failed", CellFacts(), CREATE),
        ("none", REJECTED, SKIP),
        ("none", CellFacts(), CREATE),
        ("completed", PUBLISHED, CREATE),
        ("completed", CellFacts("PUBLISHED", "v1", in_flight_run_id="run-of-another-request"), SKIP),
    ],
)
def test_the_launch_policy_decides_as_a_request_would(policy, facts, action):
    decision = admit({**UI, T.REPROCESS: policy}, GRAPH[ORDER_FACTS], facts)
    assert decision.action == action
    if action == SKIP:
        assert decision.reason.endswith(f"({T.REPROCESS}={policy})")


def test_a_side_effect_needs_the_approval_tags():
    assert admit(UI, GRAPH[REVENUE_ALERT], CellFacts()).action == SKIP
    approved = {**UI, T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "lead"}
    assert admit(approved, GRAPH[REVENUE_ALERT], CellFacts()).action == CREATE


def _cell(asset: str, day: str, ordinal: int) -> Cell:
    return Cell("dg-x", asset, day, ordinal, CellOrigin.PLANNED, M.PENDING)


def test_adoption_turns_left_alone_cells_into_skips_with_the_reason_and_so_their_downstream():
    day = "2022-09-01"
    cells = [_cell(RAW_ORDERS, day, 0), _cell(ORDER_FACTS, day, 1), _cell(DAILY_REVENUE, day, 2)]
    run = AdoptedRun(RunView("run-1", None, day, "SUCCESS"), (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE))
    skips = {(RAW_ORDERS, day, "run-1"): "latest attempt PUBLISHED (backfill/reprocess=failed)"}
    updates, status = track_adopted(
        GRAPH, cells, [run], lambda a, p, r: None, True, False, lambda a, p, r: skips.get((a, p, r)),
    )
    decided = {u.asset: (u.values["decision"], u.values["reason"]) for u in updates}
    assert decided[RAW_ORDERS] == (M.SKIPPED, "latest attempt PUBLISHED (backfill/reprocess=failed)")
    assert decided[ORDER_FACTS][0] == M.SKIPPED and "upstream raw_orders was left alone" in decided[ORDER_FACTS][1]
    assert decided[DAILY_REVENUE][0] == M.SKIPPED and "upstream raw_orders" in decided[DAILY_REVENUE][1]
    assert status == (M.COMPLETED, "Dagster backfill finished")


def test_a_cell_written_by_its_run_is_not_called_left_alone():
    day = "2022-09-01"
    cells = [_cell(ORDER_FACTS, day, 0)]
    run = AdoptedRun(RunView("run-1", None, day, "SUCCESS"), (ORDER_FACTS,))
    updates, _ = track_adopted(GRAPH, cells, [run], lambda a, p, r: "PUBLISHED", True, False, lambda a, p, r: None)
    assert updates[0].values["decision"] == M.PUBLISHED
