"""Drivers ticking one request at once (two daemons on one instance, or two Dagster daemons by mistake): each
cell is recorded as submitted once, each run key handed out once — on SQLite and PostgreSQL.

Each racer reads the request as the driver does (``Ledger.snapshot``: the tick token, the request, its cells),
decides with the real ``tick``, waits at a barrier until every racer has decided (so all of them read the same
state), then records (``Ledger.record_tick``); only a racer whose record succeeded yields run requests.
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import SkipKind
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.plan.driver_tick import REREQUEST_GRACE_SECONDS, Submission, tick
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE
from tests.orders import GRAPH
from tests.specs import spec_of

CODE = "git-abc123"
DAYS = [f"2022-10-{d:02d}" for d in range(1, 9)]
RACERS = 4


def _request(ledger: Ledger, max_active: int = 3) -> str:
    spec = spec_of(GRAPH, "2022-10-31", assets=DAILY_REVENUE, first=DAYS[0], last=DAYS[-1], requested_by="tester",
                   max_active=max_active, partitions_per_run=1)
    return ledger.create(M.new_request_id(utc_now()), spec, CODE, spec.excluded_cells(GRAPH)).request_id


def _racing_tick(ledger: Ledger, request_id: str, runs: dict[str, RunView], barrier: threading.Barrier):
    """One driver's tick; the submissions it may yield (none when another driver recorded first)."""
    snapshot = ledger.snapshot(request_id)
    result = tick(
        GRAPH, snapshot.record, snapshot.cells, dict(runs),
        lambda asset, partition, run_id: "PUBLISHED",
        lambda asset, partition: CellFacts(),
        CODE,
        rerequest_before=iso(utc_now() - timedelta(seconds=REREQUEST_GRACE_SECONDS)),
    )
    barrier.wait(timeout=30)
    recorded = ledger.record_tick(snapshot, result.cell_updates)
    if recorded and result.status:
        ledger.set_status(request_id, *result.status, expect_status=snapshot.record.status)
    return result.submissions if recorded else []


def _race_until_closed(ledger: Ledger, request_id: str) -> list[list[Submission]]:
    """Rounds of RACERS concurrent ticks; what each round's racers may submit runs and succeeds before the next."""
    runs: dict[str, RunView] = {}
    rounds = []
    with ThreadPoolExecutor(RACERS) as pool:
        for _ in range(3 * len(DAYS)):
            if ledger.get(request_id).status in M.CLOSED_STATUSES:
                break
            barrier = threading.Barrier(RACERS)
            racers = [pool.submit(_racing_tick, ledger, request_id, runs, barrier) for _ in range(RACERS)]
            outcomes = [racer.result() for racer in racers]
            rounds.append(outcomes)
            for submission in (s for submitted in outcomes for s in submitted):
                runs.setdefault(submission.run_key, RunView(f"run{len(runs)}", submission.run_key,
                                                           submission.partition, "SUCCESS"))
    return rounds


def test_concurrent_ticks_on_one_request_submit_each_cell_and_run_key_once(catalog: Catalog):
    ledger = Ledger(catalog)
    request_id = _request(ledger)

    rounds = _race_until_closed(ledger, request_id)

    keys = Counter(s.run_key for outcomes in rounds for submitted in outcomes for s in submitted)
    assert [k for k, n in keys.items() if n > 1] == [], f"a run key was submitted by two drivers: {keys}"
    days = Counter(s.partition for outcomes in rounds for submitted in outcomes for s in submitted)
    assert days == Counter(DAYS), "each day submitted exactly once"
    # In every round at most one racer recorded anything that it then submitted.
    assert all(sum(1 for submitted in outcomes if submitted) <= 1 for outcomes in rounds)
    assert ledger.get(request_id).status == M.COMPLETED
    assert {c.decision for c in ledger.cells(request_id)} == {M.PUBLISHED}


def test_a_tick_that_read_before_another_recorded_records_nothing(catalog: Catalog):
    ledger = Ledger(catalog)
    request_id = _request(ledger, max_active=2)
    first, second = ledger.snapshot(request_id), ledger.snapshot(request_id)
    decided = tick(GRAPH, first.record, first.cells, {}, lambda *a: None, lambda *a: CellFacts(), CODE)

    assert ledger.record_tick(first, decided.cell_updates)
    assert not ledger.record_tick(second, decided.cell_updates)

    cells = ledger.cells(request_id)
    assert sorted(c.partition_key for c in cells if c.decision == M.SUBMITTED) == DAYS[:2]
    # A tick that reads after the first recorded sees its decisions and submits nothing new (its runs may still
    # be being created by the first driver's daemon: not requested again within the grace).
    third = ledger.snapshot(request_id)
    again = tick(GRAPH, third.record, third.cells, {}, lambda *a: None, lambda *a: CellFacts(), CODE,
                 rerequest_before=iso(utc_now() - timedelta(seconds=REREQUEST_GRACE_SECONDS)))
    assert again.submissions == []
    assert ledger.record_tick(third, again.cell_updates)


def test_a_tick_does_not_overwrite_a_cell_another_writer_changed_since_it_read(catalog: Catalog):
    ledger = Ledger(catalog)
    request_id = _request(ledger, max_active=2)
    snapshot = ledger.snapshot(request_id)
    decided = tick(GRAPH, snapshot.record, snapshot.cells, {}, lambda *a: None, lambda *a: CellFacts(), CODE)
    # Another writer (not a driver: no tick token) settles one of those cells meanwhile.
    [day_one] = [replace(c) for c in snapshot.cells if c.partition_key == DAYS[0]]
    ledger.update_cells(request_id, [day_one.skip("marked by a person", SkipKind.MARKED)])

    assert not ledger.record_tick(snapshot, decided.cell_updates)
    assert [c.decision for c in ledger.cells(request_id) if c.decision == M.SUBMITTED] == []
