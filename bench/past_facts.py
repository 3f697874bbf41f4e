"""A depends-on-past chain read back from Dagster's event log: per day its step's start and end, and what each day
costs beyond its own step (the hand-off from one day's publish to the next day's step).

``beyond the step`` of day d = (publish of d - publish of d-1) - (publish of d - start of d's work), a publish being
the day's ASSET_MATERIALIZATION and the start its step's STEP_START (or, in a chunk run, the previous day's publish):
the time between two consecutive days' publishes that is not day d's step itself (the next run's creation, queue,
launch, run start). The first day of a chain has no predecessor and no such figure.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable

import dagster as dg

EV = dg.DagsterEventType
CHUNK_PREFIX = "chunk_"  # a chunk run's step of an asset: chunk_<asset>


@dataclass(frozen=True)
class DayStep:
    partition: str
    run_id: str
    start: float  # the asset step's STEP_START, or the run's previous day's publish (epoch s)
    end: float  # the day's ASSET_MATERIALIZATION (its publish)

    @property
    def step_s(self) -> float:
        return self.end - self.start


def _run_days(instance: dg.DagsterInstance, run_id: str, asset: str) -> list[DayStep]:
    """The days ``asset`` published in one run: each day's end is its ASSET_MATERIALIZATION, its start the step's
    STEP_START (one day per run) or the run's previous day's materialization (a chunk run carrying several days in
    one step: no hand-off between them)."""
    days, mark = [], None
    kinds = {EV.STEP_START, EV.ASSET_MATERIALIZATION}
    for entry in instance.all_logs(run_id, of_type=kinds):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type == EV.STEP_START:
            if (event.step_key or "").removeprefix(CHUNK_PREFIX).startswith(asset):
                mark = entry.timestamp
            continue
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key.path[-1] == asset and materialization.partition and mark is not None:
            days.append(DayStep(materialization.partition, run_id, mark, entry.timestamp))
            mark = entry.timestamp
    return days


def day_steps(instance: dg.DagsterInstance, records: Iterable[dg.RunRecord], asset: str) -> list[DayStep]:
    """One entry per day ``asset`` published, in partition order (the last publish of a day that ran twice)."""
    by_day: dict[str, DayStep] = {}
    for record in records:
        for step in _run_days(instance, record.dagster_run.run_id, asset):
            if step.partition not in by_day or by_day[step.partition].end < step.end:
                by_day[step.partition] = step
    return [by_day[p] for p in sorted(by_day)]


def beyond_step(days: list[DayStep]) -> list[float]:
    """Per day after the first: the time between its predecessor's publish and its own that is not its step."""
    return [(b.end - a.end) - b.step_s for a, b in zip(days, days[1:], strict=False)]


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median_s": round(statistics.median(values), 3), "min_s": round(min(values), 3),
            "max_s": round(max(values), 3), "total_s": round(sum(values), 2)}


def chain_summary(days: list[DayStep]) -> dict:
    """The chain's days, its step durations, and its cost per day beyond the step (median over days)."""
    return {
        "days": len(days),
        "step": _stats([d.step_s for d in days]),
        "beyond_step": _stats(beyond_step(days)),
        "first_step_to_last_publish_s": round(days[-1].end - days[0].start, 2) if days else None,
    }
