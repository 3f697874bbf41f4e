"""Reading a finished Dagster contender back from its instance: runs, sensor ticks, and where the time went.

Everything comes from the instance's own records (run records, event log timestamps, sensor ticks), so the
breakdown is what Dagster itself observed, not a guess.
"""

from __future__ import annotations

import statistics
from typing import Iterable

import dagster as dg

EV = dg.DagsterEventType
# The run-start figure: from the coordinator launching the run to its first step starting.
RUN_START_PHASE = "run start (RUN_STARTING -> first step)"


def runs_tagged(instance: dg.DagsterInstance, key: str, value: str) -> list[dg.RunRecord]:
    records = instance.get_run_records(dg.RunsFilter(tags={key: value}))
    return sorted(records, key=lambda r: r.create_timestamp.timestamp())


def first_start(records: list[dg.RunRecord], since: float) -> float | None:
    """Seconds from ``since`` (epoch) to the first run's start."""
    starts = [r.start_time for r in records if r.start_time]
    return round(min(starts) - since, 2) if starts else None


def last_end(records: list[dg.RunRecord], since: float) -> float | None:
    ends = [r.end_time for r in records if r.end_time]
    return round(max(ends) - since, 2) if ends else None


def sensor_ticks(instance: dg.DagsterInstance, sensor_name: str, after: float | None = None) -> list:
    for state in instance.all_instigator_state():
        if state.instigator_name == sensor_name:
            return list(instance.get_ticks(state.instigator_origin_id, state.selector_id, after=after))
    return []


def _stats(values: Iterable[float]) -> dict:
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return {"n": 0}
    return {
        "n": len(vals),
        "median_s": round(statistics.median(vals), 3),
        "mean_s": round(statistics.fmean(vals), 3),
        "max_s": round(vals[-1], 3),
        # The 99th percentile (inclusive method: never above the largest value); the one value when alone.
        "p99_s": round(statistics.quantiles(vals, n=100, method="inclusive")[98] if len(vals) > 1 else vals[0], 3),
        "total_s": round(sum(vals), 2),
    }


def _events(instance: dg.DagsterInstance, run_id: str) -> dict:
    """First timestamp of each run-level event type, and per step its worker start, start and end."""
    first: dict[str, float] = {}
    steps: dict[str, dict[str, float]] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        kind = event.event_type_value
        first.setdefault(kind, entry.timestamp)
        if event.step_key:
            steps.setdefault(event.step_key, {}).setdefault(kind, entry.timestamp)
    return {"run": first, "steps": steps}


def _step_began(step: dict[str, float]) -> float:
    return step.get(EV.STEP_WORKER_STARTING.value, step.get(EV.STEP_START.value, 0.0))


def run_breakdown(instance: dg.DagsterInstance, records: list[dg.RunRecord], max_active: int) -> dict:
    """Per-run phases (median/mean/max/total seconds) and the driver's reaction time between runs."""
    created_to_queued, queued, launch, worker, body, between, teardown, run_total = ([] for _ in range(8))
    to_first_step = []
    ends, creations = [], []
    for record in records:
        ev = _events(instance, record.dagster_run.run_id)
        run = ev["run"]
        created = record.create_timestamp.timestamp()
        creations.append(created)
        # The queued-run coordinator emits no DEQUEUED event: STARTING is when it launched the run.
        enq, starting = run.get(EV.RUN_ENQUEUED.value), run.get(EV.RUN_STARTING.value)
        start = run.get(EV.RUN_START.value)
        end = run.get(EV.RUN_SUCCESS.value) or run.get(EV.RUN_FAILURE.value)
        if enq:
            created_to_queued.append(enq - created)
        if enq and starting:
            queued.append(starting - enq)
        if starting and start:
            launch.append(start - starting)
        if start and end:
            run_total.append(end - start)
        if end:
            ends.append(end)
        ordered = sorted(ev["steps"].values(), key=_step_began)
        step_starts = [s[EV.STEP_START.value] for s in ordered if EV.STEP_START.value in s]
        if starting and step_starts:
            to_first_step.append(min(step_starts) - starting)
        previous_end = start
        for step in ordered:
            w, s = step.get(EV.STEP_WORKER_STARTING.value), step.get(EV.STEP_START.value)
            e = step.get(EV.STEP_SUCCESS.value) or step.get(EV.STEP_FAILURE.value)
            if w and s:
                worker.append(s - w)
            if s and e:
                body.append(e - s)
            if previous_end and (w or s):
                between.append((w or s) - previous_end)
            previous_end = e or previous_end
        if end and previous_end:
            teardown.append(end - previous_end)
    ends.sort()
    creations.sort()
    # With max_active slots, run k+max_active can only be created after the k-th run ended: the gap is the
    # driver's reaction time (sensor interval, tick duration, the run's end being noticed).
    reaction = [c - e for e, c in zip(ends, creations[max_active:], strict=False) if c >= e]
    return {
        "runs": len(records),
        "run created -> enqueued (planned events written)": _stats(created_to_queued),
        "queued (enqueued -> launched)": _stats(queued),
        "run worker start-up (launched -> run started)": _stats(launch),
        RUN_START_PHASE: _stats(to_first_step),
        "step worker start-up (per step, incl. resource init)": _stats(worker),
        "step body (per step)": _stats(body),
        "before each step (previous step's process exit)": _stats(between),
        "run teardown (last step -> run end)": _stats(teardown),
        "run (start -> end)": _stats(run_total),
        "driver reaction (slot freed -> next run created)": _stats(reaction),
    }


def tick_breakdown(instance: dg.DagsterInstance, sensor_names: Iterable[str], after: float) -> dict:
    out = {}
    for name in sensor_names:
        ticks = sensor_ticks(instance, name, after=after)
        durations = [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp]
        starts = sorted(t.timestamp for t in ticks)
        spacing = [b - a for a, b in zip(starts, starts[1:], strict=False)]
        out[name] = {"ticks": len(ticks), "duration": _stats(durations), "spacing": _stats(spacing)}
    return out
