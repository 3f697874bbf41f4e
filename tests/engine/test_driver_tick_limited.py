"""A batched tick decides only the days its free run slots take: the same runs, the same records in the same order
as deciding every ready day, and a later day's skip or follow recorded, as it was, on the tick that reaches it."""

from __future__ import annotations

import random

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan import driver_tick
from backfill_assets.engine.plan.driver_tick import tick
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS
from tests.orders import GRAPH
from tests.specs import spec_of

CODE = "git-abc123"
FIRST = "2022-09-01"
DAYS = GRAPH.calendar.keys_between(FIRST, "2022-10-30")  # 60 days
ASSETS = f"{ORDER_FACTS},{DAILY_REVENUE}"
OTHER = "other-requesters-run"


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(Catalog(f"sqlite:///{tmp_path}/catalog.db"))


def _request(ledger: Ledger, **options) -> str:
    spec = spec_of(GRAPH, "2022-12-31", assets=ASSETS, first=DAYS[0], last=DAYS[-1], requested_by="tester",
                   reprocess="failed", **options)
    return ledger.create(M.new_request_id(utc_now()), spec, CODE, spec.excluded_cells(GRAPH)).request_id


def _facts(seed: int, follow: tuple[str, ...] = (ORDER_FACTS, DAILY_REVENUE)) -> dict[tuple[str, str], CellFacts]:
    """Some days already published (skipped), some written by another requester's run (followed, of the assets in
    ``follow``), some marked skipped."""
    rng = random.Random(seed)
    facts = {}
    for day in DAYS:
        for asset in (ORDER_FACTS, DAILY_REVENUE):
            roll = rng.random()
            if roll < 0.15:
                facts[(asset, day)] = CellFacts(latest_state="PUBLISHED", latest_version_id=f"v-{asset}-{day}")
            elif roll < 0.2 and asset in follow:
                facts[(asset, day)] = CellFacts(in_flight_run_id=OTHER)
            elif roll < 0.23:
                facts[(asset, day)] = CellFacts(skip_mark="marked skipped by tester: bad source")
    return facts


def _tick(ledger: Ledger, rid: str, facts: dict, runs: dict, asked: list | None = None, queue_ahead: bool = False):
    def facts_of(asset: str, partition: str) -> CellFacts:
        if asked is not None:
            asked.append((asset, partition))
        return facts.get((asset, partition), CellFacts())

    return tick(GRAPH, ledger.get(rid), ledger.cells(rid), runs, lambda *_: "PUBLISHED", facts_of, CODE,
                queue_ahead=queue_ahead, followed_runs={OTHER: RunView(OTHER, None, None, "STARTED")})


def _plain(updates: list, rid: str) -> list[tuple]:
    """Updates as comparable values, the request's id out of their run keys."""
    return [(u.key, {k: v.replace(rid, "req") if k == "run_key" else v for k, v in u.values.items()})
            for u in updates]


def _deciding_every_day(monkeypatch) -> None:
    """The tick as it was: every ready day of a batch decided on each tick."""
    monkeypatch.setattr(driver_tick, "_days_the_slots_take", lambda graph, ready, *_: ready)


def _drive(ledger: Ledger, rid: str, facts: dict, queue_ahead: bool) -> list[list]:
    """Tick until nothing is left to submit, every run finishing between ticks; each tick's submissions and
    updates as plain values."""
    runs: dict[str, RunView] = {}
    ticks = []
    for _ in range(60):
        result = _tick(ledger, rid, facts, runs, queue_ahead=queue_ahead)
        assert ledger.update_cells(rid, result.cell_updates)
        ticks.append([[(s.partitions, s.assets, s.run_key.replace(rid, "req")) for s in result.submissions],
                      _plain(result.cell_updates, rid)])
        if not result.submissions:
            break
        for s in result.submissions:
            runs[s.run_key] = RunView(f"run-{s.run_key}", s.run_key, s.partition, "SUCCESS")
    return ticks


@pytest.mark.parametrize("order", ["forward", "backward"])
@pytest.mark.parametrize("per_run, max_active", [(3, 2), (7, 3), (2, 1)])
def test_a_batch_tick_makes_the_runs_and_records_of_deciding_every_day(
    tmp_path, monkeypatch, order, per_run, max_active
):
    for seed in range(3):
        facts = _facts(seed)
        for queue_ahead in (False, True):
            new = Ledger(Catalog(f"sqlite:///{tmp_path}/new-{order}-{seed}-{queue_ahead}.db"))
            old = Ledger(Catalog(f"sqlite:///{tmp_path}/old-{order}-{seed}-{queue_ahead}.db"))
            options = dict(partitions_per_run=per_run, max_active=max_active, order=order)
            new_rid, old_rid = _request(new, **options), _request(old, **options)
            limited = _tick(new, new_rid, facts, {}, queue_ahead=queue_ahead)
            with monkeypatch.context() as patched:
                _deciding_every_day(patched)
                every = _tick(old, old_rid, facts, {}, queue_ahead=queue_ahead)
            # The same runs, over the same days, under the same run keys' rounds and slots.
            assert [(s.partitions, s.assets, s.slot) for s in limited.submissions] == [
                (s.partitions, s.assets, s.slot) for s in every.submissions]
            # The records are those of deciding every day, in their order, less the skips and follows of days
            # after the last one the runs take (in the request's order).
            kept = _plain(limited.cell_updates, new_rid)
            all_updates = _plain(every.cell_updates, old_rid)
            assert kept == [u for u in all_updates if u in kept]
            taken = {p for s in every.submissions for p in s.partitions}
            ordered = DAYS if order == "forward" else DAYS[::-1]
            last_taken = max(ordered.index(p) for p in taken)
            for key, values in (u for u in all_updates if u not in kept):
                assert values["decision"] in (M.SKIPPED, M.FOLLOWING)
                assert ordered.index(key[1]) > last_taken


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_a_later_days_skip_or_follow_is_recorded_as_before_when_its_day_is_reached(
    tmp_path, monkeypatch, order
):
    # Followed cells of the downstream asset only: an upstream cell that follows another run holds its day's
    # downstream cell back only once its follow is recorded, and a far day's is now recorded on the tick that
    # reaches the day, with the downstream cell (``test_an_upstream_follow_is_decided_with_its_days_downstream``).
    facts = _facts(7, follow=(DAILY_REVENUE,))
    options = dict(partitions_per_run=4, max_active=2, order=order)
    new = Ledger(Catalog(f"sqlite:///{tmp_path}/new.db"))
    old = Ledger(Catalog(f"sqlite:///{tmp_path}/old.db"))
    new_rid, old_rid = _request(new, **options), _request(old, **options)
    limited = _drive(new, new_rid, facts, queue_ahead=False)
    with monkeypatch.context() as patched:
        _deciding_every_day(patched)
        every = _drive(old, old_rid, facts, queue_ahead=False)
    # The same runs, tick after tick; every cell ends with the same decision, reason and followed run.
    assert [t[0] for t in limited] == [t[0] for t in every]

    def ends(ledger: Ledger, rid: str) -> dict:
        return {c.key: (c.decision, c.reason, c.skip_kind, c.dagster_run_id if c.decision == M.FOLLOWING else None)
                for c in ledger.cells(rid)}

    assert ends(new, new_rid) == ends(old, old_rid)
    assert {v[0] for v in ends(new, new_rid).values()} >= {M.SKIPPED, M.FOLLOWING}
    # The first tick decided a handful of days only: a far day's follow waited for the tick reaching it.
    assert len(limited[0][1]) < len(every[0][1])


def test_the_first_tick_of_a_long_batched_request_reads_the_facts_of_the_days_it_takes_alone(ledger):
    rid = _request(ledger, partitions_per_run=3, max_active=2)
    asked: list[tuple[str, str]] = []
    result = _tick(ledger, rid, {}, {}, asked=asked)
    assert [s.partitions for s in result.submissions] == [tuple(DAYS[0:3]), tuple(DAYS[3:6])]
    # The two runs' six days, and the seventh that begins the run after them: never the other 53.
    assert {p for _, p in asked} == set(DAYS[:7])


def test_an_upstream_follow_is_decided_with_its_days_downstream_cell_on_the_tick_that_reaches_the_day(ledger):
    """As on the first tick of a request for the days it takes (and before, for every day): the upstream cell
    follows the other run, the downstream cell of the same day goes in this request's run."""
    far = DAYS[10]
    facts = {(ORDER_FACTS, far): CellFacts(in_flight_run_id=OTHER)}
    rid = _request(ledger, partitions_per_run=3, max_active=2)
    runs: dict[str, RunView] = {}
    for _ in range(3):
        result = _tick(ledger, rid, facts, runs)
        assert ledger.update_cells(rid, result.cell_updates)
        runs |= {s.run_key: RunView(f"run-{s.run_key}", s.run_key, s.partition, "SUCCESS") for s in result.submissions}
        if any(far in s.partitions for s in result.submissions):
            break
    cells = {c.key: c for c in ledger.cells(rid)}
    assert (cells[(ORDER_FACTS, far)].decision, cells[(ORDER_FACTS, far)].dagster_run_id) == (M.FOLLOWING, OTHER)
    assert cells[(DAILY_REVENUE, far)].decision == M.SUBMITTED
