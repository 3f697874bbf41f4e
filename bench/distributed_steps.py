"""Where a Celery trial's time went, from the Dagster event log of its runs (what Dagster itself recorded).

Per step of a run on the Celery executor (``dagster_celery``):

- **submitted**: the run's executor sends the step to the broker (engine event "Submitting celery task ...").
  A step of the source (``raw_orders``) is submitted only once the ``source_system`` pool has a free slot.
- **picked up**: a worker took the message and built the step's plan (engine event "... in celery worker"; the
  first step on a fresh worker includes importing the code location).
- **start / end**: STEP_START, STEP_SUCCESS or STEP_FAILURE, written by the worker. The worker is named by the
  process that wrote STEP_START (the event's pid, among the trial's worker processes); the Celery hostname the
  worker reported is kept beside it, and a step whose pid is no worker of the trial is named "pid N".
- **hand-off**: from a step's end to the submission of the next step of the same run: the executor polls its
  Celery results once a second (``core_execution_loop.TICK_SECONDS``) and only then submits what follows.
"""

from __future__ import annotations

import statistics
from typing import Iterable

import dagster as dg

from backfill_assets.engine.model import tags as T

from .dagster_facts import runs_tagged

EV = dg.DagsterEventType
SUBMITTED = "Submitting celery task"
PICKED_UP = "in celery worker"
WORKER_KEY = "Celery worker"


def _stats(values: Iterable[float]) -> dict:
    vals = sorted(values)
    if not vals:
        return {"n": 0}
    return {"n": len(vals), "median_s": round(statistics.median(vals), 3), "max_s": round(vals[-1], 3),
            "total_s": round(sum(vals), 2)}


def _worker_of(event: dg.DagsterEvent) -> str | None:
    metadata = getattr(event.event_specific_data, "metadata", None) or {}
    value = metadata.get(WORKER_KEY)
    hostname = getattr(value, "value", value)
    return str(hostname).split("@")[0] if hostname else None  # celery names a worker "<name>@<host>"


def run_steps(instance: dg.DagsterInstance, run_id: str, worker_pids: dict[int, str]) -> tuple[dict, list[dict]]:
    """(first timestamp of each run event, [per step: submitted, picked, start, end, worker, hostname]) of one
    run."""
    run: dict[str, float] = {}
    steps: dict[str, dict] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        kind, ts = event.event_type_value, entry.timestamp
        run.setdefault(kind, ts)
        if not event.step_key:
            continue
        step = steps.setdefault(event.step_key, {"step": event.step_key})
        message = event.message or ""
        if kind == EV.ENGINE_EVENT.value and SUBMITTED in message:
            step.setdefault("submitted", ts)
        elif kind == EV.ENGINE_EVENT.value and PICKED_UP in message:
            step.setdefault("picked", ts)
            step["hostname"] = _worker_of(event)
        elif kind == EV.STEP_START.value:
            step.setdefault("start", ts)
            step["worker"] = worker_pids.get(event.pid, f"pid {event.pid}")
        elif kind in (EV.STEP_SUCCESS.value, EV.STEP_FAILURE.value):
            step["end"] = ts
    return run, sorted(steps.values(), key=lambda s: s.get("submitted", s.get("start", 0.0)))


def _asset_of(step_key: str) -> str:
    return step_key.split("__")[0]


def step_breakdown(instance: dg.DagsterInstance, request_id: str, since: float, wall_s: float,
                   worker_pids: dict[int, str]) -> dict:
    """Per-phase statistics over every step of the request's runs, the step bodies per asset, and each
    worker's busy time (picked up -> step end) as a share of the request's wall time."""
    queue, setup, body, handoff, to_first, teardown = ([] for _ in range(6))
    bodies: dict[str, list[float]] = {}
    busy: dict[str, float] = {}
    steps_per_worker: dict[str, int] = {}
    timeline = []
    records = runs_tagged(instance, T.REQUEST_ID, request_id)
    for n, record in enumerate(records):
        run, steps = run_steps(instance, record.dagster_run.run_id, worker_pids)
        timeline += [_moment(n, step, since) for step in steps]
        started = run.get(EV.RUN_START.value)
        ended = run.get(EV.RUN_SUCCESS.value) or run.get(EV.RUN_FAILURE.value)
        previous_end = None
        for step in steps:
            sub, picked, start, end = (step.get(k) for k in ("submitted", "picked", "start", "end"))
            if sub and picked:
                queue.append(picked - sub)
            if picked and start:
                setup.append(start - picked)
            if start and end:
                body.append(end - start)
                bodies.setdefault(_asset_of(step["step"]), []).append(end - start)
            if previous_end and sub:
                handoff.append(sub - previous_end)
            if picked and end and step.get("worker"):
                busy[step["worker"]] = busy.get(step["worker"], 0.0) + (end - picked)
                steps_per_worker[step["worker"]] = steps_per_worker.get(step["worker"], 0) + 1
            previous_end = end or previous_end
        if started and steps and steps[0].get("submitted"):
            to_first.append(steps[0]["submitted"] - started)
        if ended and previous_end:
            teardown.append(ended - previous_end)
    return {
        "runs": len(records),
        "steps": len(timeline),
        "first_run_start_s": round(min((r.start_time for r in records if r.start_time), default=since) - since, 2),
        "first_step_submitted_s": min((m["submitted"] for m in timeline if m["submitted"] is not None), default=None),
        "phases": {
            "run start -> first step submitted (raw_orders waits here for the source pool)": _stats(to_first),
            "submitted -> picked up by a worker (queue, plan; imports on a cold worker)": _stats(queue),
            "picked up -> step start": _stats(setup),
            "step body (start -> end)": _stats(body),
            "hand-off (step end -> next step submitted: executor tick)": _stats(handoff),
            "last step end -> run end": _stats(teardown),
        },
        "step_body_by_asset": {asset: _stats(v) for asset, v in sorted(bodies.items())},
        "workers": {name: {"steps": steps_per_worker[name], "busy_s": round(b, 1),
                           "busy_share": round(b / wall_s, 3) if wall_s else None}
                    for name, b in sorted(busy.items())},
        "cold_pickup_s": _cold_pickups(timeline),
        "overlaps_on_one_worker": _overlaps(timeline),
        "timeline": sorted(timeline, key=lambda m: m.get("submitted") or 0.0),
    }


def _moment(run: int, step: dict, since: float) -> dict:
    """One step's moments in seconds after ``since`` (the request's creation), for the results file."""
    out = {"run": run, "step": step["step"], "worker": step.get("worker"), "hostname": step.get("hostname")}
    for key in ("submitted", "picked", "start", "end"):
        out[key] = round(step[key] - since, 2) if step.get(key) else None
    return out


def _cold_pickups(timeline: list[dict]) -> dict[str, float]:
    """Per worker, submitted -> picked up of its first step: the message's wait plus the worker's first import
    of the code location (a worker loads it when its first step arrives, not when it starts)."""
    first: dict[str, dict] = {}
    for m in sorted(timeline, key=lambda m: m["picked"] or float("inf")):
        if m["worker"] and m["worker"] not in first and m["picked"] is not None and m["submitted"] is not None:
            first[m["worker"]] = m
    return {name: round(m["picked"] - m["submitted"], 2) for name, m in sorted(first.items())}


def _overlaps(timeline: list[dict]) -> int:
    """Pairs of steps of one worker that ran at the same time: 0 with ``--pool=solo`` (one step at a time), unless
    a step is named after the wrong process."""
    count = 0
    for i, a in enumerate(timeline):
        for b in timeline[i + 1:]:
            if a["worker"] == b["worker"] and None not in (a["start"], a["end"], b["start"], b["end"]):
                count += a["start"] < b["end"] and b["start"] < a["end"]
    return count
