"""``--partitions-per-run auto|K``: the value parsed, auto resolved once at creation, and the runs it makes."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.request_input import parse_partitions_per_run, resolve_partitions_per_run
from backfill_assets.engine.plan.chunking import planned_runs
from backfill_assets.engine.plan.driver_tick import tick
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.store import db
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import (
    CUSTOMER_SNAPSHOT,
    DAILY_REVENUE,
    ORDER_FACTS,
    RAW_ORDERS,
    REVENUE_ALERT,
)
from backfill_assets.service.catalog_schema import upgrade_catalog_schema
from tests.engine.catalog_helpers import as_before_versioning
from tests.orders import GRAPH
from tests.specs import spec_of

NEWEST = "2023-12-31"
FIRST = "2022-09-01"


def _spec(days: int, assets: str = DAILY_REVENUE, **options) -> M.RequestSpec:
    last = GRAPH.calendar.keys_between(FIRST, NEWEST)[days - 1]
    return spec_of(GRAPH, NEWEST, assets=assets, first=FIRST, last=last, **options)


def _resolve(intervals: int, max_active: int, assets=(DAILY_REVENUE,), downstream="none", requested=M.AUTO):
    """K and how it was chosen, as stored and printed (``explicit``, ``auto: <why>``)."""
    k, mode, reason = resolve_partitions_per_run(GRAPH, tuple(assets), downstream, intervals, max_active, requested)
    return k, M.per_run_text(mode, reason)


def _runs(spec: M.RequestSpec) -> list[str]:
    cells = [(a, p) for p in spec.ordered_partitions() for a in spec.assets]
    return [run.label for run in planned_runs(GRAPH, spec, cells)]


@pytest.mark.parametrize("value, parsed", [("auto", M.AUTO), (" AUTO ", M.AUTO), ("1", 1), ("5", 5), (7, 7),
                                           (M.MAX_PARTITIONS_PER_RUN, M.MAX_PARTITIONS_PER_RUN)])
def test_partitions_per_run_takes_auto_or_an_integer_from_1_to_the_max(value, parsed):
    assert parse_partitions_per_run(value) == parsed


@pytest.mark.parametrize("value", [0, -1, "0", "-1", "abc", "", "2.5", 2.5, True, None, [3], "٣",
                                   M.MAX_PARTITIONS_PER_RUN + 1, str(M.MAX_PARTITIONS_PER_RUN + 1)])
def test_partitions_per_run_refuses_anything_else_in_one_line(value):
    with pytest.raises(InvalidInput, match=r"^partitions_per_run .* must be auto or an integer from 1 to 366$"):
        parse_partitions_per_run(value)


def test_auto_runs_one_interval_per_run_up_to_the_threshold_per_slot_and_batches_above_it():
    at = M.AUTO_MIN_INTERVALS_PER_SLOT * 2
    assert _resolve(at, 2)[0] == 1
    assert "at most 3 per slot" in _resolve(at, 2)[1]
    k, why = _resolve(at + 1, 2)
    assert (k, why) == (4, "auto: 7 intervals over 2 run slot(s), up to 4 per run")
    assert _resolve(M.AUTO_MIN_INTERVALS_PER_SLOT, 1)[0] == 1
    assert _resolve(M.AUTO_MIN_INTERVALS_PER_SLOT + 1, 1)[0] == M.AUTO_MIN_INTERVALS_PER_SLOT + 1


def test_auto_fills_every_slot_with_one_chunk_run_capped_at_the_max():
    assert _resolve(20, 2)[0] == 10
    assert _resolve(120, 2)[0] == 60
    assert _resolve(121, 2)[0] == 61
    k, why = _resolve(800, 1)
    assert k == M.MAX_PARTITIONS_PER_RUN and why.endswith("(the cap)")


def test_auto_runs_a_depends_on_past_chain_in_as_few_runs_as_the_cap_allows():
    assert _resolve(100, 2, assets=(ORDER_FACTS, CUSTOMER_SNAPSHOT)) == (
        100, f"auto: {CUSTOMER_SNAPSHOT} depends on the past, so its 100 interval(s) run in order in as few runs "
             "as possible, up to 100 per run")
    # A chain gains nothing from splitting over slots, and a short one still saves a launch per day.
    assert _resolve(2, 2, assets=(CUSTOMER_SNAPSHOT,))[0] == 2
    assert _resolve(1, 2, assets=(CUSTOMER_SNAPSHOT,))[0] == 1
    k, why = _resolve(800, 2, assets=(CUSTOMER_SNAPSHOT,))
    assert k == M.MAX_PARTITIONS_PER_RUN and why.endswith("(the cap)")
    # Cascading from order_facts reaches customer_snapshot: the request may hold its cells too (so may an
    # accepted handoff); without a downstream policy it holds only order_facts.
    assert _resolve(100, 2, assets=(ORDER_FACTS,), downstream="cascade")[0] == 100
    assert _resolve(100, 2, assets=(ORDER_FACTS,), downstream="handoff")[0] == 100
    assert _resolve(100, 2, assets=(ORDER_FACTS,), downstream="none")[0] == 50
    # daily_revenue's cascade reaches only the side effect, which never batches but does not stop the rest.
    assert _resolve(100, 2, assets=(DAILY_REVENUE,), downstream="cascade")[0] == 50


def test_auto_runs_one_interval_per_run_when_nothing_can_be_batched():
    k, why = _resolve(100, 2, assets=(REVENUE_ALERT,))
    assert (k, why) == (1, "auto: no asset of the request can be batched, so one interval per run")


def test_an_explicit_partitions_per_run_is_kept_whatever_the_size():
    assert _resolve(120, 2, requested=1) == (1, M.EXPLICIT)
    assert _resolve(2, 2, requested="5") == (5, M.EXPLICIT)
    assert _resolve(100, 2, assets=(CUSTOMER_SNAPSHOT,), requested=5) == (5, M.EXPLICIT)


def test_the_spec_freezes_the_resolved_k_and_how_it_was_chosen(tmp_path):
    spec = _spec(20, max_active=2)
    assert (spec.partitions_per_run, spec.partitions_per_run_auto) == (10, True)
    assert _spec(20, max_active=2, partitions_per_run=1).partitions_per_run_mode == M.EXPLICIT
    ledger = Ledger(Catalog(f"sqlite:///{tmp_path}/catalog.db"))
    record = ledger.create(M.new_request_id(utc_now()), spec, "git-abc", spec.excluded_cells(GRAPH))
    stored = ledger.get(record.request_id)
    assert (stored.spec.partitions_per_run, stored.spec.partitions_per_run_mode) == (10, spec.partitions_per_run_mode)
    assert stored.as_dict()["partitions_per_run_mode"].startswith("auto: 20 intervals")


def test_auto_spreads_20_days_over_2_slots_as_2_runs_of_10_days():
    spec = _spec(20, assets=f"{ORDER_FACTS},{DAILY_REVENUE}", max_active=2)
    assert _runs(spec) == ["2022-09-01..2022-09-10", "2022-09-11..2022-09-20"]


def test_auto_on_120_days_over_2_slots_makes_2_runs_of_at_most_the_max():
    spec = _spec(120, max_active=2)
    cells = [(a, p) for p in spec.ordered_partitions() for a in spec.assets]
    runs = planned_runs(GRAPH, spec, cells)
    assert [len(r.partitions) for r in runs] == [60, 60]
    assert all(len(r.partitions) <= M.MAX_PARTITIONS_PER_RUN for r in runs)


def test_one_per_run_plans_one_run_per_interval_and_a_chain_plans_runs_of_k_consecutive_days():
    assert _runs(_spec(8, partitions_per_run=1)) == GRAPH.calendar.keys_between(FIRST, "2022-09-08")
    assert _runs(_spec(8, assets=CUSTOMER_SNAPSHOT, partitions_per_run=1)) == GRAPH.calendar.keys_between(
        FIRST, "2022-09-08")
    # Batched, the depends-on-past asset follows the chunk runs in runs of up to K days of its own, in order.
    spec = _spec(8, assets=f"{RAW_ORDERS},{CUSTOMER_SNAPSHOT}", partitions_per_run=3)
    assert _runs(spec) == ["2022-09-01..2022-09-03", "2022-09-04..2022-09-06", "2022-09-07..2022-09-08",
                           "2022-09-01..2022-09-03", "2022-09-04..2022-09-06", "2022-09-07..2022-09-08"]
    # auto: a 42-day chain is one run.
    chain = planned_runs(GRAPH, _spec(42, assets=CUSTOMER_SNAPSHOT),
                         [(CUSTOMER_SNAPSHOT, p) for p in GRAPH.calendar.keys_between(FIRST, "2022-10-12")])
    assert [(r.label, r.assets) for r in chain] == [("2022-09-01..2022-10-12", (CUSTOMER_SNAPSHOT,))]


def test_the_driver_submits_the_runs_the_dry_run_plans(tmp_path):
    spec = _spec(20, assets=f"{ORDER_FACTS},{DAILY_REVENUE}", max_active=2)
    ledger = Ledger(Catalog(f"sqlite:///{tmp_path}/catalog.db"))
    record = ledger.create(M.new_request_id(utc_now()), spec, "git-abc", spec.excluded_cells(GRAPH))
    for queue_ahead in (False, True):
        result = tick(GRAPH, ledger.get(record.request_id), ledger.cells(record.request_id), {},
                      lambda *_: None, lambda *_: CellFacts(), "git-abc", queue_ahead=queue_ahead)
        labels = [f"{s.partitions[0]}..{s.partitions[-1]}" for s in result.submissions]
        assert labels == _runs(spec)
        assert all(s.assets == (ORDER_FACTS, DAILY_REVENUE) for s in result.submissions)


def test_a_catalog_from_before_gets_the_new_column_when_upgraded_and_its_requests_read_as_explicit(tmp_path):
    url = f"sqlite:///{tmp_path}/old.db"
    spec = _spec(20, partitions_per_run=4)
    rid = Ledger(Catalog(url)).create(M.new_request_id(utc_now()), spec, "git-abc", {}).request_id
    with db.engine_for(url).begin() as conn:  # as a release from before the column and schema versions made it
        as_before_versioning(conn)
        conn.exec_driver_sql("ALTER TABLE requests DROP COLUMN partitions_per_run_mode")
    db.dispose_all()
    upgrade_catalog_schema(url)  # what `backfill-assets catalog upgrade` runs
    ledger = Ledger(Catalog(url))
    assert "partitions_per_run_mode" in {c["name"] for c in sa.inspect(ledger.engine).get_columns("requests")}
    assert (ledger.get(rid).spec.partitions_per_run, ledger.get(rid).spec.partitions_per_run_mode) == (4, M.EXPLICIT)
