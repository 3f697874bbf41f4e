"""Catalog publishes racing from separate processes: exactly one winner per expected pointer, no lost update,
a gapless publish log — on SQLite and PostgreSQL."""

from __future__ import annotations

from itertools import pairwise

from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import ACTION_PUBLISH, Catalog

from .catalog_helpers import (
    ASSET,
    KEY,
    pointer_row,
    race_publish_once,
    race_publish_repeatedly,
    run_racers,
    state,
)

S = VersionState


RACERS = 8


def _race_round(catalog: Catalog, url: str, label: str, expected_previous: str | None) -> str:
    outcomes = run_racers(race_publish_once, [(url, f"race-{label}-{i}") for i in range(RACERS)])
    winners = [o[1] for o in outcomes if o[0] == "won"]
    losers = [o for o in outcomes if o[0] == "conflict"]
    assert len(winners) == 1, outcomes
    assert len(losers) == RACERS - 1
    [winner] = winners
    # Every racer began before any of them published: all expected the same pointer.
    racers = [v for v in catalog.versions_of(ASSET, KEY) if v.logical_run_id.startswith(f"race-{label}-")]
    assert len(racers) == RACERS
    assert {v.expected_previous_version_id for v in racers} == {expected_previous}
    # The losers were told who won, and stay VERIFYING (for the gate to reject).
    assert {o[2] for o in losers} == {winner}
    assert {state(catalog, o[1]) for o in losers} == {S.VERIFYING.value}
    assert catalog.current(ASSET, KEY).version_id == winner
    published_now = [v.version_id for v in catalog.versions_of(ASSET, KEY) if v.state == S.PUBLISHED.value]
    assert published_now == [winner]
    return winner


def test_racing_publishers_in_separate_processes_have_exactly_one_winner(catalog_url):
    catalog = Catalog(catalog_url)  # create the schema before the racers open the catalog

    first = _race_round(catalog, catalog_url, "a", expected_previous=None)
    second = _race_round(catalog, catalog_url, "b", expected_previous=first)

    log = catalog.log_after(0)
    assert [r["seq"] for r in log] == [1, 2]
    assert [(r["version_id"], r["previous_version_id"]) for r in log] == [(first, None), (second, first)]
    assert state(catalog, first) == S.SUPERSEDED.value
    ptr = pointer_row(catalog)
    assert (ptr["version_id"], ptr["previous_version_id"]) == (second, first)


def test_concurrent_sequential_publishers_lose_no_update(catalog_url):
    catalog = Catalog(catalog_url)
    per_worker = 5
    reports = run_racers(race_publish_repeatedly, [(catalog_url, w, per_worker) for w in range(RACERS)])

    log = catalog.log_after(0)
    total = RACERS * per_worker
    assert len(log) == total
    assert [r["seq"] for r in log] == list(range(1, total + 1))  # strictly increasing, no gaps, no duplicates
    assert log[0]["previous_version_id"] is None
    for before, after in pairwise(log):
        assert after["previous_version_id"] == before["version_id"], after  # an unbroken chain
    assert {r["action"] for r in log} == {ACTION_PUBLISH}

    # What each worker was told matches the log.
    by_seq = {r["seq"]: r for r in log}
    for _, _, wins, _ in reports:
        assert len(wins) == per_worker
        for version_id, seq, previous in wins:
            assert (by_seq[seq]["version_id"], by_seq[seq]["previous_version_id"]) == (version_id, previous)
    assert len({r["version_id"] for r in log}) == total

    states = {v.version_id: v.state for v in catalog.versions_of(ASSET, KEY)}
    assert [v for v, s in states.items() if s == S.PUBLISHED.value] == [log[-1]["version_id"]]
    assert catalog.current(ASSET, KEY).version_id == log[-1]["version_id"]
    assert {states[r["version_id"]] for r in log[:-1]} == {S.SUPERSEDED.value}
    lost = sum(report[3] for report in reports)
    assert sum(1 for s in states.values() if s == S.REJECTED.value) == lost
    assert len(states) == total + lost
