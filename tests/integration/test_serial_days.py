"""The days of an asset declared ``parallel_days=False``, in a backfill launched from Dagster, are computed one at a
time on any instance (``integration/assets/step_slots.py``): real runs of one backfill, each in its own process,
started at once as Dagster's own run queue starts them on a stock instance, on one real home."""

from __future__ import annotations

import json
import os
import time
from itertools import pairwise

import dagster as dg
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.target_slots import SlotHolder, TargetSlots
from backfill_assets.engine.wap.target_lease import TargetQuota, write_slot
from backfill_assets.integration.assets import step_slots
from tests.forkserver import forkserver_context
from tests.homes import HasStores, fresh_home, in_process_overrides

from .serial_days_children import ENV_SPANS, run_day

DAYS = ["2024-03-01", "2024-03-02", "2024-03-03"]
BACKFILL = {T.DAGSTER_BACKFILL: "serial01", T.LANE: ""}  # a UI backfill's runs carry no lane tag of ours
CHILD_SECONDS = 300  # a hang detector


class Home(HasStores):
    def __init__(self, tmp_path, monkeypatch):
        home = tmp_path / "home"
        self.settings = fresh_home(home, monkeypatch)
        (home / "dagster.yaml").write_text(json.dumps({**in_process_overrides(), "telemetry": {"enabled": False}}))
        self.spans_file = tmp_path / "spans.jsonl"
        monkeypatch.setenv(ENV_SPANS, str(self.spans_file))
        self.env = {k: v for k, v in os.environ.items() if k.startswith(("DAGSTER_", "BACKFILL_")) or k == ENV_SPANS}

    def spans(self) -> list[tuple[str, float, float]]:
        if not self.spans_file.exists():
            return []
        return [tuple(json.loads(line)) for line in self.spans_file.read_text().splitlines()]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Home:
    home = Home(tmp_path, monkeypatch)
    for day in DAYS:  # production has published the upstream days
        assert run_day(day, "visits", {}).success
    return home


def _at_once(home: Home, tags: dict[str, str]) -> list[dict]:
    """One run per day, each in its own process, all started together."""
    context = forkserver_context()
    results = context.Queue()
    children = [context.Process(target=_child, args=(home.env, day, tags, results)) for day in DAYS]
    for child in children:
        child.start()
    found = [results.get(timeout=CHILD_SECONDS) for _ in children]
    for child in children:
        child.join(timeout=CHILD_SECONDS)
    return sorted(found, key=lambda r: r["day"])


def _child(env, day, tags, results) -> None:
    from tests.integration.serial_days_children import run_day_in_child

    run_day_in_child(env, day, tags, results)


def _overlapping(spans: list[tuple[str, float, float]]) -> list[tuple[str, str]]:
    ordered = sorted(spans, key=lambda span: span[1])
    return [(a[0], b[0]) for a, b in pairwise(ordered) if b[1] < a[2]]


def test_a_backfills_days_started_at_once_are_computed_one_at_a_time_and_all_published(home):
    runs = _at_once(home, BACKFILL)
    assert [r["success"] for r in runs] == [True] * 3, [r["failure"] for r in runs]
    assert sorted(day for day, _, _ in home.spans()) == DAYS
    assert _overlapping(home.spans()) == []
    assert [home.catalog.current("sessions", day).dagster_run_id for day in DAYS] == [r["run_id"] for r in runs]


def test_runs_outside_a_dagster_backfill_are_not_held(home):
    """Production's runs (and a request's, paced by its driver) compute their days at once, as before."""
    runs = _at_once(home, {})
    assert all(r["success"] for r in runs)
    assert _overlapping(home.spans()) != []


def _held_by_another_step(home: Home):
    """The backfill's day slot for ``sessions``, held as another run's step holds it while computing the first day."""
    holder = SlotHolder("another-step", 0, "other-run", "sessions", DAYS[0])
    quota = TargetQuota(step_slots.day_slot_target(BACKFILL[T.DAGSTER_BACKFILL], "sessions"), 1, 30.0, 5.0)
    return write_slot(TargetSlots(home.catalog), quota, holder)


def test_a_day_that_waits_past_its_budget_is_not_attempted_naming_the_holder(home, monkeypatch):
    monkeypatch.setattr(step_slots, "WAIT_SECONDS", 1.0)
    with _held_by_another_step(home):
        result = run_day(DAYS[1], "sessions", BACKFILL)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error.message
    assert (f"sessions {DAYS[1]}: not attempted — waited 1 s for this backfill's other days of sessions "
            f"(parallel_days=False: one at a time), held by: sessions {DAYS[0]} (run other-run, priority 0)"
            ) in failure, failure
    assert home.spans() == []
    assert home.catalog.versions_of("sessions", DAYS[1]) == []  # nothing written


def test_a_day_waiting_for_the_slot_stops_waiting_once_its_run_is_cancelled(home):
    """A run marked cancelled whose worker no signal reaches (its code server did not answer) stops waiting for
    the slot instead of holding its run slot for hours: nothing computed, nothing written."""
    context = forkserver_context()
    results = context.Queue()
    second_day = {T.DAGSTER_BACKFILL: BACKFILL[T.DAGSTER_BACKFILL], T.DAGSTER_PARTITION: DAYS[1]}
    with _held_by_another_step(home), dg.DagsterInstance.get() as instance:
        child = context.Process(target=_child, args=(home.env, DAYS[1], BACKFILL, results))
        child.start()
        deadline = time.monotonic() + CHILD_SECONDS
        while not (waiting := [r for r in instance.get_runs(dg.RunsFilter(tags=second_day))
                               if "its days run one at a time" in _logs(instance, r.run_id)]):
            assert time.monotonic() < deadline and child.is_alive(), "the second day never waited for the slot"
            time.sleep(0.1)
        instance.report_run_canceling(waiting[0])  # marked only: no signal reaches the worker
        result = results.get(timeout=CHILD_SECONDS)
        child.join(timeout=CHILD_SECONDS)
    assert not result["success"]
    assert (f"sessions {DAYS[1]}: not attempted — run {result['run_id']} is CANCELING: it was cancelled, so it may "
            "not publish (it was waiting for this backfill's other days of sessions)") in result["failure"], result
    assert home.spans() == [] and home.catalog.versions_of("sessions", DAYS[1]) == []


def _logs(instance, run_id: str) -> str:
    return " ".join(e.user_message for e in instance.all_logs(run_id))
