"""How to read the Celery figure: the sentences of its section computed from the trials, so that they stay true
when the benchmark is run again (where the CPU went, what the request's shape lets a second worker gain at most,
what the Celery hand-off and the fixed start cost)."""

from __future__ import annotations

import statistics

SOURCE_STEP = "raw_orders"  # the step of each run that takes the source pool (pools.default_limit 1)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _good(result: dict, workers: int) -> list[dict]:
    return [t for t in result["trials"] if t["workers"] == workers and t["check"]["ok"]]


def speedup_bound(result: dict) -> dict | None:
    """The most a second worker can gain on this request's shape, from the 1-worker trials' own step times.

    Two runs, each a chain of steps; the source pool lets one extract run at a time. One worker runs the 2 chains
    one step after the other: F + 2S (S: a run's step bodies, F: the rest of the wall). Two workers can at best run
    the second chain from the end of the first extract (p): F + p + S. ``None`` unless the request had 2 runs."""
    ones = _good(result, 1)
    if not ones or any(t["steps"]["runs"] != 2 for t in ones):
        return None
    bodies = [t["steps"]["step_body_by_asset"] for t in ones]
    per_run = _median([sum(s["total_s"] for s in b.values()) / 2 for b in bodies])
    extract = _median([s["median_s"] for b in bodies for name, s in b.items() if name.endswith(SOURCE_STEP)])
    outside = _median([t["wall_s"] - sum(s["total_s"] for s in b.values()) for t, b in zip(ones, bodies, strict=True)])
    if per_run is None or extract is None or outside is None:
        return None
    return {"per_run_s": round(per_run, 1), "extract_s": round(extract, 1), "outside_s": round(outside, 1),
            "bound": round((outside + 2 * per_run) / (outside + extract + per_run), 2)}


def _parts(config: dict) -> dict:
    parts = config["cpu_parts_s_mean"]
    return {"pg": parts.get("PostgreSQL (whole server)"), "daemon": parts.get("dagster-daemon (+ run processes)"),
            "moto": parts.get("moto_server (S3)")}


def _on_cpu_share(result: dict) -> float | None:
    """With one worker: the worker's CPU over the time it held a step (picked up -> end)."""
    shares = [t["cpu"]["workers_s"] / sum(w["busy_s"] for w in t["steps"]["workers"].values())
              for t in _good(result, 1) if t["steps"]["workers"]]
    return round(100 * _median(shares)) if shares else None


def _phase_median(result: dict, workers: int, phase_start: str, key: str = "median_s") -> float | None:
    """The median over a configuration's trials of one phase's per-trial ``key`` (as the section's table)."""
    values = [s[key] for t in _good(result, workers) for name, s in t["steps"]["phases"].items()
              if name.startswith(phase_start) and s.get("n")]
    return round(_median(values), 1 if key == "total_s" else 2) if values else None


def reading(result: dict, cores: int | str = "?") -> list[str]:
    """The paragraphs under the tables (empty if a configuration is missing)."""
    conf = result["summary"]["configurations"]
    one, two = conf.get("1"), conf.get("2")
    if not one or not two or not one["trials"] or not two["trials"]:
        return []
    p1, p2 = _parts(one), _parts(two)
    lines = [
        f"Where the CPU went (means per trial): the workers used {one['workers_s_mean']} CPU s with one worker and "
        f"{two['workers_s_mean']} with two (the same steps, spread over two processes), the rest of the stack "
        f"{one['rest_s_mean']} and {two['rest_s_mean']}: PostgreSQL {p1['pg']} / {p2['pg']} (its sessions are "
        f"almost all Dagster's storage, which opens a connection per call), dagster-daemon and its run processes "
        f"{p1['daemon']} / {p2['daemon']}, moto_server {p1['moto']} / {p2['moto']}. With one worker a step was on a "
        f"CPU {_on_cpu_share(result)} % of the time it held the worker: the rest it waited on PostgreSQL, on S3 "
        f"and for the {cores} cores it shares with every other process. That waiting is what a second worker "
        "overlaps; it adds no CPU to spend. The cores themselves were busy "
        f"{round(100 * one['machine_utilisation_mean'])} % / {round(100 * two['machine_utilisation_mean'])} % of "
        f"the time, {one['not_ours_s_mean']} / {two['not_ours_s_mean']} CPU s per trial not ours (other work on "
        "the shared machine; the per-trial table shows which trials it hit).",
    ]
    bound = speedup_bound(result)
    if bound:
        b1 = _phase_median(result, 1, "step body", "total_s")
        b2 = _phase_median(result, 2, "step body", "total_s")
        lines += ["", f"The request's shape bounds the gain: 2 runs, each a chain of steps, and the `source_system` "
                  f"pool lets one `{SOURCE_STEP}` step run at a time, so at most 2 steps are in flight and the "
                  "second run's chain can start only when the first extract ends. With the 1-worker trials' own "
                  f"times (a run's steps {bound['per_run_s']} s, its extract {bound['extract_s']} s, "
                  f"{bound['outside_s']} s of the wall outside the steps) the best 2-worker wall gives a ratio of "
                  f"about **{bound['bound']}** at most (more only where both extracts ran at once: source pool "
                  f"slots 2); two steps at once also slow each other on 2 cores (the request's step bodies add up to "
                  f"{b1} s with one worker, {b2} s with two)."]
    handoff = _phase_median(result, 2, "hand-off")
    first = _good(result, 2)[0]["steps"]
    per_run = first["steps"] // max(first["runs"], 1) - 1
    one_per_run = result["days"] * (len(result["assets"]) - 1)
    lines += ["", f"Fixed costs: the first step is sent {one['first_step_submitted_s_median']} / "
              f"{two['first_step_submitted_s_median']} s after `request create` is typed (the CLI's start-up "
              f"{one['create_command_s_median']} / {two['create_command_s_median']} s, the driver's tick, the run's "
              f"launch). The Celery hand-off between two steps of a run (step end → next step sent) is {handoff} s "
              f"at the median: the run's executor polls its Celery results once a second. Here it is paid {per_run} "
              f"times a run; with one interval per run (`--partitions-per-run 1`: {result['days']} runs) it would "
              f"be paid {one_per_run} times."]
    return lines
