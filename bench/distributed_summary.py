"""The figures of a Celery benchmark run (``bench/distributed.py``), from its trials.

Only trials whose checks passed count. Per worker count: the medians of wall time and cells per minute (a median
of 3 survives one trial that other work on the shared machine slowed), the mean CPU per part of the stack, the
PostgreSQL counters and the fixed start; then the 2-worker / 1-worker throughput ratio, of the medians and of each
adjacent pair of trials (the schedule alternates 1, 2, 2, 1, ...: a pair ran back to back).
"""

from __future__ import annotations

import statistics


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def _mean_parts(trials: list[dict]) -> dict:
    names = {n for t in trials for n in t["cpu"]["parts_s"]}
    return {n: round(statistics.fmean(t["cpu"]["parts_s"].get(n, 0.0) for t in trials), 1) for n in sorted(names)}


def _mean_counters(counters: list[dict]) -> dict:
    keys = ("sessions", "active_s", "transactions")
    return {k: round(statistics.fmean(c[k] for c in counters), 1) if counters else None for k in keys}


def _configuration(good: list[dict], failed: int) -> dict:
    """One worker count over its trials that passed their checks."""

    def mean(key: str) -> float | None:
        return round(statistics.fmean(t["cpu"][key] for t in good), 1) if good else None

    return {
        "trials": len(good),
        "failed_trials": failed,
        "wall_s": [t["wall_s"] for t in good],
        "wall_s_median": _median([t["wall_s"] for t in good]),
        "cells_per_min": [t["cells_per_min"] for t in good],
        "cells_per_min_median": _median([t["cells_per_min"] for t in good]),
        "cpu_parts_s_mean": _mean_parts(good) if good else {},
        **{f"{key}_mean": mean(key) for key in ("workers_s", "rest_s", "ours_s", "machine_busy_s", "not_ours_s",
                                                 "harness_s")},
        "machine_utilisation_mean": round(statistics.fmean(t["cpu"]["machine_utilisation"] for t in good), 3)
        if good else None,
        "load_1min": [[t["load_average"]["before"][0], t["load_average"]["after"][0]] for t in good],
        "postgresql_ours_mean": _mean_counters([t["postgresql"]["ours"] for t in good]),
        "postgresql_by_database_mean": {
            label: _mean_counters([t["postgresql"]["by_database"][label] for t in good])
            for label in (good[0]["postgresql"]["by_database"] if good else {})
        },
        "postgresql_ours_share_of_active": _median([t["postgresql"]["ours_share_of_active"] for t in good
                                                   if t["postgresql"]["ours_share_of_active"] is not None]),
        "cold_pickup_s": [t["steps"]["cold_pickup_s"] for t in good],
        # The fixed part of the wall, before any step: the CLI's start-up, the driver's tick, the run's launch.
        "create_command_s_median": _median([t["create_command_s"] for t in good]),
        "first_step_submitted_s_median": _median([t["steps"]["first_step_submitted_s"] for t in good
                                                  if t["steps"]["first_step_submitted_s"] is not None]),
    }


def summarise(trials: list[dict]) -> dict:
    """Per worker count, over the trials whose checks passed: medians of wall and throughput, mean CPU per part;
    and the 2-worker / 1-worker throughput ratio (of the medians, and per repetition pair)."""
    out: dict = {"configurations": {}}
    for count in sorted({t["workers"] for t in trials}):
        mine = [t for t in trials if t["workers"] == count]
        good = [t for t in mine if t["check"]["ok"]]
        out["configurations"][str(count)] = _configuration(good, len(mine) - len(good))
    conf = out["configurations"]
    one, two = (conf.get(k, {}).get("cells_per_min_median") for k in ("1", "2"))
    out["ratio_2_over_1"] = round(two / one, 3) if one and two else None
    pairs = [trials[i:i + 2] for i in range(0, len(trials) - 1, 2)]
    out["ratio_per_repetition"] = [
        round(next(t for t in p if t["workers"] == 2)["cells_per_min"]
              / next(t for t in p if t["workers"] == 1)["cells_per_min"], 3)
        for p in pairs if {t["workers"] for t in p} == {1, 2} and all(t["check"]["ok"] for t in p)
    ]
    return out
