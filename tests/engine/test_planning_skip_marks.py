"""A cell a person marked skipped (``backfill-assets skip``) is left alone by ``--reprocess none`` and ``failed``
with the mark as its reason, and re-run by ``completed``, which says it overrides the mark (pure)."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.plan.planning import CREATE, SKIP, CellFacts, decide
from backfill_assets.examples.orders.domain import ORDER_FACTS, REVENUE_ALERT
from tests.orders import GRAPH
from tests.specs import spec_of

MARK = "marked skipped by ops: source outage, no data"


def _spec(reprocess: str, assets: str = ORDER_FACTS, **extra) -> M.RequestSpec:
    return spec_of(GRAPH, "2022-10-31", assets=assets, first="2022-10-01", last="2022-10-02",
                        reprocess=reprocess, requested_by="tester", **extra)


@pytest.mark.parametrize("latest", [None, "REJECTED", "ABANDONED", "PUBLISHED"])
@pytest.mark.parametrize("reprocess", [M.ReprocessPolicy.NONE, M.ReprocessPolicy.FAILED])
def test_a_marked_cell_is_skipped_with_the_mark_as_its_reason_whatever_its_versions(reprocess, latest):
    facts = CellFacts(latest, "v1" if latest else None, skip_mark=MARK)
    assert decide(_spec(reprocess), GRAPH[ORDER_FACTS], facts).label == f"skip: {MARK}"


def test_the_same_cells_without_the_mark_would_run_under_failed():
    assert decide(_spec("failed"), GRAPH[ORDER_FACTS], CellFacts("REJECTED", "v1")).action == CREATE


def test_reprocess_completed_reruns_a_marked_cell_and_says_it_overrides_the_mark():
    decision = decide(_spec("completed"), GRAPH[ORDER_FACTS], CellFacts("PUBLISHED", "v1", skip_mark=MARK))
    assert decision.action == CREATE and MARK in decision.reason


def test_a_run_in_flight_still_wins_over_the_mark():
    facts = CellFacts(None, None, in_flight_run_id="0123456789abcdef", skip_mark=MARK)
    assert decide(_spec("completed"), GRAPH[ORDER_FACTS], facts).reason.startswith("in flight")


def test_an_authorized_side_effect_is_not_affected_by_a_mark():
    spec = _spec("none", assets=REVENUE_ALERT, allow_side_effects=REVENUE_ALERT, approved_by="lead")
    assert decide(spec, GRAPH[REVENUE_ALERT], CellFacts(skip_mark=MARK)).action == CREATE
    assert decide(_spec("none", assets=REVENUE_ALERT), GRAPH[REVENUE_ALERT], CellFacts(skip_mark=MARK)).action == SKIP
