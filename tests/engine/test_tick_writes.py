"""A driver tick's cell updates, written in a few statements (engine/store/tick_writes.py): each cell gets its own
values, and a cell that no longer has what the tick read makes the whole tick record nothing, on SQLite and
PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import CellUpdate, SkipKind
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS
from tests.orders import GRAPH
from tests.specs import spec_of

CODE = "git-abc123"
DAYS = [f"2022-10-{d:02d}" for d in range(1, 7)]


def _submitted(ledger: Ledger) -> str:
    """A request of two assets over six days, every cell submitted: days 1-3 under one run key, 4-6 another."""
    spec = spec_of(GRAPH, "2022-10-31", assets=f"{ORDER_FACTS},{DAILY_REVENUE}", first=DAYS[0], last=DAYS[-1],
                   requested_by="tester", max_active=2, partitions_per_run=3)
    request_id = ledger.create(M.new_request_id(utc_now()), spec, CODE, spec.excluded_cells(GRAPH)).request_id
    ledger.update_cells(request_id, [
        CellUpdate(c.asset, c.partition_key,
                   {"decision": M.SUBMITTED, "run_key": f"k{DAYS.index(c.partition_key) // 3}"})
        for c in ledger.cells(request_id)
    ])
    return request_id


def test_a_settlement_writes_each_cell_its_own_values(catalog: Catalog):
    ledger = Ledger(catalog)
    request_id = _submitted(ledger)
    snapshot = ledger.snapshot(request_id)
    updates = []
    for cell in [replace(c) for c in snapshot.cells]:  # copies, as the tick changes its copies
        run = "run-a" if cell.partition_key <= DAYS[2] else "run-b"
        updates.append(cell.change(dagster_run_id=run))  # the run found, then its outcome: two updates of a cell
        if cell.partition_key == DAYS[4] and cell.asset == ORDER_FACTS:
            updates.append(cell.change(decision=M.FAILED, reason="run failure, no version written"))
        else:
            updates.append(cell.change(decision=M.PUBLISHED, reason=None))

    assert ledger.record_tick(snapshot, updates)

    after = {c.key: (c.decision, c.reason, c.dagster_run_id, c.run_key) for c in ledger.cells(request_id)}
    for asset in (ORDER_FACTS, DAILY_REVENUE):
        for n, day in enumerate(DAYS):
            run, key = ("run-a", "k0") if n < 3 else ("run-b", "k1")
            failed = (asset, day) == (ORDER_FACTS, DAYS[4])
            expected = (M.FAILED, "run failure, no version written") if failed else (M.PUBLISHED, None)
            assert after[(asset, day)] == (*expected, run, key), (asset, day)


def test_a_tick_that_changes_a_cell_twice_records_nothing(catalog: Catalog):
    # Each write expects what the tick read: a second change of decision no longer finds it, as one UPDATE per
    # change found it (one tick writes a cell's decision once).
    ledger = Ledger(catalog)
    request_id = _submitted(ledger)
    snapshot = ledger.snapshot(request_id)
    [cell] = [c for c in snapshot.cells if c.key == (ORDER_FACTS, DAYS[0])]
    twice = [CellUpdate(cell.asset, cell.partition_key, {"decision": M.PENDING, "run_key": None}),
             CellUpdate(cell.asset, cell.partition_key, {"decision": M.PUBLISHED})]

    assert not ledger.record_tick(snapshot, twice)
    assert {c.decision for c in ledger.cells(request_id)} == {M.SUBMITTED}


def test_a_tick_records_nothing_when_one_of_many_cells_changed_since_it_read(catalog: Catalog):
    ledger = Ledger(catalog)
    request_id = _submitted(ledger)
    snapshot = ledger.snapshot(request_id)
    updates = [replace(c).change(decision=M.PUBLISHED, dagster_run_id="run-a") for c in snapshot.cells]
    # Another writer (a person's skip mark) changes the last cell after the tick read it.
    last = max(ledger.cells(request_id), key=lambda c: c.ordinal)
    ledger.update_cells(request_id, [last.skip("marked by a person", SkipKind.MARKED)])

    assert not ledger.record_tick(snapshot, updates)
    assert [c.decision for c in ledger.cells(request_id) if c.decision == M.PUBLISHED] == []


def test_a_tick_records_nothing_for_a_cell_it_did_not_read(catalog: Catalog):
    ledger = Ledger(catalog)
    request_id = _submitted(ledger)
    snapshot = ledger.snapshot(request_id)

    assert not ledger.record_tick(snapshot, [CellUpdate(ORDER_FACTS, "2022-11-30", {"decision": M.PUBLISHED})])
