"""The admission check of a backfill launched from Dagster: the same decision as a request's driver, from the
backfill's launch tags; the adoption sensor turns its skips into skipped cells with the reason."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Cell, CellOrigin, Skip, SkipKind
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.plan.admission import admit, is_launched_from_dagster, launch_policy
from backfill_assets.engine.plan.adoption import (
    AdoptedRun,
    adopted_spec,
    awaiting_confirmation,
    driven_cells,
    track_adopted,
)
from backfill_assets.engine.plan.pacing import declared_pacing, pacing_tags, released_partitions
from backfill_assets.engine.plan.planning import CREATE, SKIP, CellFacts
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.examples.orders.domain import (
    CUSTOMER_SNAPSHOT,
    DAILY_REVENUE,
    ORDER_FACTS,
    RAW_ORDERS,
    REVENUE_ALERT,
)
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
    skips = {(RAW_ORDERS, day, "run-1"): Skip("latest attempt PUBLISHED (backfill/reprocess=failed)")}
    updates, status = track_adopted(
        GRAPH, cells, [run], lambda a, p, r: None, True, False, lambda a, p, r: skips.get((a, p, r)),
    )
    decided = {u.asset: (u.values["decision"], u.values["reason"]) for u in updates}
    assert decided[RAW_ORDERS] == (M.SKIPPED, "latest attempt PUBLISHED (backfill/reprocess=failed)")
    assert decided[ORDER_FACTS][0] == M.SKIPPED and "upstream raw_orders was left alone" in decided[ORDER_FACTS][1]
    assert decided[DAILY_REVENUE][0] == M.SKIPPED and "upstream raw_orders" in decided[DAILY_REVENUE][1]
    # Left alone on purpose, not because something failed to publish: the kind says so, not the words.
    assert {u.values["skip_kind"] for u in updates} == {SkipKind.DECIDED}
    assert status == (M.COMPLETED, "Dagster backfill finished: 3 skipped")


def test_a_cell_written_by_its_run_is_not_called_left_alone():
    day = "2022-09-01"
    cells = [_cell(ORDER_FACTS, day, 0)]
    run = AdoptedRun(RunView("run-1", None, day, "SUCCESS"), (ORDER_FACTS,))
    updates, _ = track_adopted(GRAPH, cells, [run], lambda a, p, r: "PUBLISHED", True, False, lambda a, p, r: None)
    assert updates[0].values["decision"] == M.PUBLISHED


@pytest.mark.parametrize(
    "value, policy, confirm",
    [(None, "none", False), ("none", "none", False), ("cascade", "cascade", False), ("confirm", "cascade", True),
     ("handoff", "handoff", False)],
)
def test_a_ui_backfill_keeps_its_downstream_policy(value, policy, confirm):
    tags = UI if value is None else {**UI, T.DOWNSTREAM: value}
    spec = adopted_spec(GRAPH, ((ORDER_FACTS, "2022-09-01"),), tags, "ui-user", default_max_active=2)
    assert (spec.downstream, spec.confirm_cascade) == (policy, confirm)


@pytest.mark.parametrize("value", ["CASCADE", "all", "cascade,handoff", "confirmed"])
def test_an_unknown_downstream_policy_is_refused_naming_the_tag(value):
    with pytest.raises(InvalidInput, match=f"tag {T.DOWNSTREAM}=.* is not one of none, cascade, handoff, confirm"):
        launch_policy({**UI, T.DOWNSTREAM: value})


def test_a_ui_backfill_may_authorize_a_side_effect_its_cascade_reaches():
    tags = {**UI, T.DOWNSTREAM: "cascade", T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "lead"}
    spec = adopted_spec(GRAPH, ((DAILY_REVENUE, "2022-09-01"),), tags, "ui-user", default_max_active=2)
    assert spec.side_effect_authorized(REVENUE_ALERT)


def test_an_adopted_backfill_closes_only_once_the_cells_its_policy_added_are_done():
    """The driver runs the cascaded and handed-off cells (driven_cells); the backfill's own runs never settle
    them, and the request stays open until they are terminal and nothing downstream is still to be decided."""
    day = "2022-09-01"
    cells = [_cell(ORDER_FACTS, day, 0), replace(_cell(DAILY_REVENUE, day, 1), origin=CellOrigin.CASCADE),
             replace(_cell(CUSTOMER_SNAPSHOT, day, 2), origin=CellOrigin.HANDOFF)]
    assert [c.asset for c in driven_cells(cells)] == [DAILY_REVENUE, CUSTOMER_SNAPSHOT]
    run = AdoptedRun(RunView("run-1", None, day, "SUCCESS"), (ORDER_FACTS,))
    updates, status = track_adopted(GRAPH, cells, [run], lambda a, p, r: "PUBLISHED", True, False)
    assert [(u.asset, u.values["decision"]) for u in updates] == [(ORDER_FACTS, M.PUBLISHED)]
    assert status == (M.OPEN, "Dagster backfill finished; 2 cell(s) its downstream policy added still to settle")
    assert track_adopted(GRAPH, cells, [run], lambda a, p, r: "PUBLISHED", False, False)[1] is None
    done = [replace(c, decision=M.PUBLISHED) for c in cells]
    _, held = track_adopted(GRAPH, done, [run], lambda a, p, r: "PUBLISHED", True, False, hold_open="1 handoff(s) open")
    assert held == (M.OPEN, "Dagster backfill finished; 1 handoff(s) open")
    _, closed = track_adopted(GRAPH, done, [run], lambda a, p, r: "PUBLISHED", True, False)
    assert closed == (M.COMPLETED, "Dagster backfill finished: 3 published")
    # Cancelled: what the driver has not submitted is cancelled with the backfill.
    cancelled, _ = track_adopted(GRAPH, cells, [run], lambda a, p, r: None, True, True)
    assert {u.asset: u.values["decision"] for u in cancelled if u.asset != ORDER_FACTS} == {
        DAILY_REVENUE: M.CELL_CANCELLED, CUSTOMER_SNAPSHOT: M.CELL_CANCELLED}


def test_a_cell_another_run_had_in_flight_follows_that_run_and_takes_its_outcome():
    """Done means published for a UI backfill too: the step left the cell alone because another run was writing it;
    the adopted request waits for that run and takes its outcome, or says the day was not published."""
    day, followed_id = "2022-09-01", "other-run-0123456789"
    run = AdoptedRun(RunView("run-1", None, day, "SUCCESS"), (ORDER_FACTS, DAILY_REVENUE))
    in_flight = Skip(f"in flight (run {followed_id[:8]}) (backfill/reprocess=completed)", followed_run_id=followed_id)

    def skips(a, p, r):
        return in_flight if (a, r) == (ORDER_FACTS, "run-1") else None

    cells = [_cell(ORDER_FACTS, day, 0), _cell(DAILY_REVENUE, day, 1)]
    updates, status = track_adopted(GRAPH, cells, [run], lambda a, p, r: None, True, False, skips)
    decided = {u.asset: u.values for u in updates}
    assert (decided[ORDER_FACTS]["decision"], decided[ORDER_FACTS]["dagster_run_id"]) == (M.FOLLOWING, followed_id)
    # Its downstream step was skipped by Dagster: never computed from the followed day, so not done.
    assert decided[DAILY_REVENUE]["skip_kind"] == SkipKind.LEFT_UNPUBLISHED and status is None

    following = [cells[0]]
    running = {followed_id: RunView(followed_id, None, day, "STARTED")}
    assert track_adopted(GRAPH, following, [run], lambda a, p, r: None, True, False, skips,
                         followed_runs=running) == ([], None)
    ended = {followed_id: RunView(followed_id, None, day, "SUCCESS")}
    [published], closed = track_adopted(
        GRAPH, [replace(c) for c in following], [run], lambda a, p, r: "PUBLISHED" if r == followed_id else None,
        True, False, skips, followed_runs=ended)
    assert (published.values["decision"], published.values["reason"]) == (M.PUBLISHED, "followed run other-ru")
    assert closed == (M.COMPLETED, "Dagster backfill finished: 1 published")
    [gone], closed = track_adopted(GRAPH, [replace(c) for c in following], [run], lambda a, p, r: None, True, False,
                                   skips, followed_runs={})
    assert gone.values["decision"] == M.SKIPPED and gone.values["skip_kind"] == SkipKind.LEFT_UNPUBLISHED
    assert closed[0] == M.FAILED


def test_cascaded_cells_of_an_adopted_backfill_wait_for_confirmation_when_it_asks():
    day = "2022-09-01"
    cells = [replace(_cell(DAILY_REVENUE, day, 1), origin=CellOrigin.CASCADE)]
    spec = adopted_spec(GRAPH, ((ORDER_FACTS, day),), {**UI, T.DOWNSTREAM: "confirm"}, "ui-user", 2)
    assert awaiting_confirmation("dg-x", spec, False, cells) == (
        M.OPEN, "1 cascaded cell(s) wait for `request confirm dg-x`"
    )
    assert awaiting_confirmation("dg-x", spec, True, cells) is None


@pytest.mark.parametrize(
    "tag, value",
    [(T.MAX_ACTIVE, "0"), (T.MAX_ACTIVE, "65"), (T.MAX_ACTIVE, "two"), (T.MAX_ACTIVE, "-1"), (T.ORDER, "newest")],
)
def test_bad_pacing_tags_are_refused_naming_the_tag(tag, value):
    with pytest.raises(InvalidInput, match=f"tag {tag}="):
        launch_policy({**UI, tag: value})


def test_pacing_tags_default_from_the_run_coordinator():
    assert launch_policy(UI, default_max_active=3).max_active == 3
    assert launch_policy({**UI, T.MAX_ACTIVE: "1"}, default_max_active=3).max_active == 1
    assert launch_policy(UI).order == "forward"


def test_a_depends_on_past_asset_refuses_backward_order():
    with pytest.raises(InvalidInput, match=f"tag {T.ORDER}=backward is refused: {CUSTOMER_SNAPSHOT}"):
        admit({**UI, T.ORDER: "backward"}, GRAPH[CUSTOMER_SNAPSHOT], CellFacts())
    assert admit({**UI, T.ORDER: "backward"}, GRAPH[ORDER_FACTS], CellFacts()).action == CREATE


def test_a_launch_tag_contradicting_a_declaration_is_refused_naming_the_asset():
    with pytest.raises(InvalidInput, match=f"tag {T.MAX_ACTIVE}=4 is refused: {CUSTOMER_SNAPSHOT} depends on the past"):
        admit({**UI, T.MAX_ACTIVE: "4"}, GRAPH[CUSTOMER_SNAPSHOT], CellFacts())
    backward_only = replace(GRAPH[ORDER_FACTS], order="backward", parallel_days=False)
    with pytest.raises(InvalidInput, match=f"tag {T.ORDER}=forward is refused: {ORDER_FACTS} declares order=backward"):
        admit({**UI, T.ORDER: "forward"}, backward_only, CellFacts())
    with pytest.raises(InvalidInput, match="declares parallel_days=False, so its days run one at a time"):
        admit({**UI, T.MAX_ACTIVE: "2"}, backward_only, CellFacts())
    assert admit({**UI, T.ORDER: "backward", T.MAX_ACTIVE: "1"}, backward_only, CellFacts()).action == CREATE


DAYS = ["2022-10-01", "2022-10-02", "2022-10-03", "2022-10-04", "2022-10-05"]


def _paced(tags: dict, day: str, serial: bool = False, declared: str | None = None) -> dict:
    return pacing_tags("dg-abc", {**UI, **tags}, day, DAYS, serial, default_max_active=2, declared_order=declared)


def test_backward_runs_newest_first_in_max_active_slots():
    paced = {d: _paced({T.ORDER: "backward"}, d) for d in DAYS}
    by_priority = sorted(DAYS, key=lambda d: -int(paced[d][T.DAGSTER_PRIORITY]))
    assert by_priority == list(reversed(DAYS))
    # Consecutive runs in that order take distinct slots: two run at once, never three.
    assert [paced[d][T.SLOT] for d in by_priority] == ["dg-abc/0", "dg-abc/1", "dg-abc/0", "dg-abc/1", "dg-abc/0"]
    assert all(p[T.LANE] == T.LANE_BACKFILL for p in paced.values())
    assert max(int(p[T.DAGSTER_PRIORITY]) for p in paced.values()) < T.PRIORITY_PRODUCTION


def test_forward_runs_oldest_first_and_max_active_sets_the_slots():
    paced = {d: _paced({T.MAX_ACTIVE: "3"}, d) for d in DAYS}
    assert sorted(DAYS, key=lambda d: -int(paced[d][T.DAGSTER_PRIORITY])) == DAYS
    assert {p[T.SLOT] for p in paced.values()} == {"dg-abc/0", "dg-abc/1", "dg-abc/2"}


def test_a_depends_on_past_backfill_has_one_slot_and_runs_forward():
    # The asset tags the coordinator reads: depends on the past, so serial and forward whatever the launch tags.
    serial, declared = declared_pacing([{T.DEPENDS_ON_PAST: "true", T.DAY_ORDER: "forward"}, {T.DAY_ORDER: "any"}])
    paced = {d: _paced({T.MAX_ACTIVE: "4", T.ORDER: "backward"}, d, serial, declared) for d in DAYS}
    assert {p[T.SLOT] for p in paced.values()} == {"dg-abc/0"}
    assert sorted(DAYS, key=lambda d: -int(paced[d][T.DAGSTER_PRIORITY])) == DAYS


def test_a_backfill_without_order_tags_takes_the_order_and_pace_its_assets_declare():
    serial, declared = declared_pacing([{T.DAY_ORDER: "backward", T.PARALLEL_DAYS: "false"}, {T.DAY_ORDER: "any"}])
    assert (serial, declared) == (True, "backward")
    paced = {d: _paced({}, d, serial, declared) for d in DAYS}
    assert {p[T.SLOT] for p in paced.values()} == {"dg-abc/0"}
    assert sorted(DAYS, key=lambda d: -int(paced[d][T.DAGSTER_PRIORITY])) == list(reversed(DAYS))
    assert declared_pacing([{T.DAY_ORDER: "any", T.PARALLEL_DAYS: "true"}]) == (False, None)


def test_a_bad_pacing_tag_paces_with_the_defaults():
    # The steps refuse the tag (above); the queue still holds the backfill to the default max_active.
    assert {_paced({T.MAX_ACTIVE: "many"}, d)[T.SLOT] for d in DAYS} == {"dg-abc/0", "dg-abc/1"}


def test_an_adopted_request_records_the_effective_pacing():
    cells = tuple((ORDER_FACTS, d) for d in DAYS)
    spec = adopted_spec(GRAPH, cells, {T.MAX_ACTIVE: "1", T.ORDER: "backward"}, "ui-user", default_max_active=2)
    assert (spec.max_active, spec.order, spec.serial) == (1, "backward", False)
    assert adopted_spec(GRAPH, cells, {}, None, default_max_active=3).max_active == 3
    past = adopted_spec(GRAPH, tuple((CUSTOMER_SNAPSHOT, d) for d in DAYS), {}, None, default_max_active=2)
    assert past.serial and past.effective_max_active == 1
    # Without tags, the declared order and pace: recorded as what the backfill runs with.
    assert (past.max_active, past.order) == (1, "forward")
    backward_only = replace(GRAPH[ORDER_FACTS], order="backward", parallel_days=False)
    graph = AssetGraph(GRAPH.calendar, [backward_only if s.name == ORDER_FACTS else s for s in GRAPH])
    declared = adopted_spec(graph, cells, {}, None, default_max_active=3)
    assert (declared.max_active, declared.order, declared.serial) == (1, "backward", True)
    # An instance whose coordinator does not pace Dagster's backfills: the record does not claim it does.
    assert adopted_spec(GRAPH, cells, {T.MAX_ACTIVE: "1"}, None, default_max_active=None).max_active == 64


def test_held_runs_are_released_once_every_run_before_them_is_queued():
    backward = list(reversed(DAYS))
    # Dagster queues oldest first: a backward backfill's runs stay held until the newest is queued.
    assert released_partitions(backward, set(DAYS[:4])) == []
    assert released_partitions(backward, set(DAYS)) == backward
    assert released_partitions(DAYS, set(DAYS[:2])) == DAYS[:2]
    assert released_partitions(DAYS, {DAYS[0], DAYS[2]}) == DAYS[:1]
    assert all(_paced({}, d)[T.QUEUE_HOLD] == T.HELD for d in DAYS)
