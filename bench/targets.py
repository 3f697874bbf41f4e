"""The targets table of docs/BENCHMARKS.md: the current targets first, each row in the group of what it asks for,
then the earlier targets still tracked. Every figure comes from one results file; the side by side's are medians
over its repetitions."""

from __future__ import annotations

from pathlib import Path

from .dagster_facts import RUN_START_PHASE
from .past_report import HAND_OFF, past_target_rows
from .published_tables_report import GROUP as PUBLISHED_FOR_EVERY_READER
from .published_tables_report import target_row as tables_target_row
from .scale_report import EARLIER_TARGET, NEAR_THE_FLOOR, scale_target_rows
from .tables import table, verdict

RESULTS = Path(__file__).resolve().parent / "results"

# The "group" column: what a current target asks for (the scale rows' and the depends-on-past rows' groups come
# from their modules), or EARLIER_TARGET for a target set before the current ones and still tracked.
AHEAD = "ahead of Dagster and Airflow"  # ours' wall against naive Dagster's and Airflow's
AT_ONCE = "start at once"  # the first run and each run's first step start without waiting for a timer
PUBLISH = "publish near a plain write"  # publish CAS p99 against a plain UPDATE + INSERT
# In the order they first appear:
CURRENT_GROUPS = (NEAR_THE_FLOOR, AHEAD, AT_ONCE, PUBLISH, HAND_OFF, PUBLISHED_FOR_EVERY_READER)
# (numerator, denominator, figure, target): ratios of the side by side's medians, of wall time (``wall_s``) or of
# CPU seconds (``cpu_s``). B against the floor: in CPU against F (the work done, whatever the cores), in wall against
# F2 (the floor on both cores, as B's two run slots are); B/F in wall was the target before them.
RATIOS = (("O", "A", "wall_s", 0.6), ("B", "A", "wall_s", 0.25), ("B", "F", "cpu_s", 2.0), ("B", "F2", "wall_s", 2.0),
          ("B", "F", "wall_s", 3.0), ("B", "N", "wall_s", 0.1), ("O", "N", "wall_s", 0.5))
FIRST_RUN_AFTER_RETURN_LIMIT_S = 1.0  # the first run's RUN_START after `request create` returned
RUN_START_LIMIT_S = 0.5  # median RUN_STARTING -> first STEP_START of ours
CAS_P99_RATIO_LIMIT = 2.0  # publish CAS p99 / baseline UPDATE+INSERT p99
# The previous full run (one repetition, dagster-daemon): its figures are shown beside the current targets' rows.
EARLIER_RUN = "20261201T165151Z"
EARLIER = {
    "O/A": "0.495", "B/A": "0.284", "B/F": "6.37", "B/N": "0.169", "first_run B": "6.42", "first_run O": "6.57",
    "cas_ratio": "1.0", "run_start": "2.07 s (O 0.24 s)",
}
RATIO_FIGURES = {
    "O/A": "O/A (one interval per run vs Airflow 3)",
    "B/A": "default request path (B) / A",
    "B/F CPU": "B/F in CPU (default path vs the plain loop, side by side, {days} d)",
    "B/F2": "B/F2 in wall (default path vs the plain loop on two processes, side by side, {days} d)",
    "B/F": "B/F in wall (default path vs the plain loop, side by side, {days} d)",
    "B/N": "B/N (default path vs naive Dagster)",
    "O/N": "O/N (one interval per run vs naive Dagster)",
}


def ratio_key(a: str, b: str, figure: str) -> str:
    """``B/F2`` for a ratio of walls, ``B/F CPU`` for one of CPU seconds."""
    return f"{a}/{b}" if figure == "wall_s" else f"{a}/{b} CPU"


def ratios(contenders: dict) -> dict:
    """The ratios of RATIOS between the contenders' (median) figures in one run (None when one side was not
    run)."""
    out = {}
    for a, b, figure, _target in RATIOS:
        key = ratio_key(a, b, figure)
        if a in contenders and b in contenders and contenders[b][figure]:
            out[key] = round(contenders[a][figure] / contenders[b][figure], 3)
        else:
            out[key] = None
    return out


def first_run(details: dict) -> tuple[float | None, float | None]:
    """(after `request create` returned, after it was invoked); older results files measured the first run
    from the invocation only, and their command's seconds give the other."""
    if "first_run_after_invocation_s" in details:
        return details.get("first_run_start_s"), details["first_run_after_invocation_s"]
    invoked, command = details.get("first_run_start_s"), details.get("create_command_s")
    return (round(invoked - command, 2) if invoked is not None and command is not None else None), invoked


def _first_run_rows(c: dict, name: str) -> list[list]:
    details = c.get(name, {}).get("details", {})
    after_return, after_invocation = first_run(details)
    command = details.get("create_command_s")
    a_first = c.get("A", {}).get("details", {}).get("first_task_start_s")
    a_text = "A not run" if a_first is None else f"{a_first} s"
    against_a = verdict(after_invocation, a_first) if a_first is not None else "not measured (A not run)"
    return [
        [f"first run started after `request create` returned, s ({name}; the command itself: {command} s)", AT_ONCE,
         "", after_return, f"≤ {FIRST_RUN_AFTER_RETURN_LIMIT_S:g}",
         verdict(after_return, FIRST_RUN_AFTER_RETURN_LIMIT_S)],
        [f"first run started after `request create` was invoked, s ({name})", AT_ONCE,
         EARLIER.get(f"first_run {name}", ""), after_invocation,
         f"≤ A's first task ({a_text})", against_a],
    ]


def _run_start_row(c: dict, name: str, group: str) -> list:
    phase = c.get(name, {}).get("details", {}).get("breakdown", {}).get(RUN_START_PHASE, {})
    median = phase.get("median_s")
    return [f"run start (RUN_STARTING -> first step) median s ({name})", group,
            EARLIER["run_start"] if name == "B" else "", median, f"≤ {RUN_START_LIMIT_S}",
            verdict(median, RUN_START_LIMIT_S)]


def _ratio_row(r: dict, key: str, group: str, c: dict, days: int | None = None) -> list:
    a, b, limit = next((a, b, t) for a, b, figure, t in RATIOS if ratio_key(a, b, figure) == key)
    absent = ", ".join(name for name in (a, b) if name not in c)
    result = f"not measured ({absent} not run)" if r.get(key) is None and absent else verdict(r.get(key), limit)
    return [RATIO_FIGURES[key].format(days=days), group, EARLIER.get(key, ""), r.get(key), f"≤ {limit}", result]


def _earlier_rows(c: dict, m: dict) -> list[list]:
    """The earlier targets on memory and the micro-benchmarks."""
    rows = []
    if "O" in c and "B" in c:
        rss = round(c["B"]["peak_process_rss_mb"] / c["O"]["peak_process_rss_mb"], 2)
        rows.append(["largest process RSS, B / O", EARLIER_TARGET, "", rss, "≤ 1.5", verdict(rss, 1.5)])
    if not m:
        return rows
    p99 = m["publish_cas"]["cas"]["p99_ms"]
    rows.append(["publish CAS p99 ms (PostgreSQL, 8 publishers)", EARLIER_TARGET, "", p99, "< 20", verdict(p99, 20)])
    plan = m["plan_10y"]["dry_run_total_s"]
    rows.append(["10-year x 5-asset create + dry run s", EARLIER_TARGET, "", plan, "< 1", verdict(plan, 1)])
    for backend in ("sqlite", "postgresql"):
        rec = m["reconcile_10k"][backend]["seconds"]
        rows.append([f"reconcile 10,000 versions s ({backend})", EARLIER_TARGET, "", rec, "< 2", verdict(rec, 2)])
        prop = m["propagation_10k"][backend]
        rows.append([f"propagation over 10,000 events s ({backend}, {prop['evaluations']} evaluations)",
                     EARLIER_TARGET, "", prop["all_events_s"], "< 2", verdict(prop["all_events_s"], 2)])
    return rows


def targets_table(results: dict) -> list[str]:
    c, m = results["contenders"], results.get("micro") or {}
    # The stored ratios, and those a results file from before a target was set can give from its medians.
    r, days = {**ratios(c), **results["ratios"]}, results["sizes"]["days"]
    scale_current, scale_earlier = scale_target_rows(results)
    rows = [_ratio_row(r, "B/F CPU", NEAR_THE_FLOOR, c, days), _ratio_row(r, "B/F2", NEAR_THE_FLOOR, c, days),
            *scale_current, _ratio_row(r, "B/N", AHEAD, c),
            _ratio_row(r, "B/A", AHEAD, c), *_first_run_rows(c, "B"), *_first_run_rows(c, "O"),
            _ratio_row(r, "O/A", AHEAD, c)]
    cas_ratio = m.get("publish_cas", {}).get("p99_ratio") if m else None
    rows.append(["publish CAS p99 / baseline p99 (PostgreSQL, 8 publishers)", PUBLISH, EARLIER["cas_ratio"],
                 cas_ratio, f"≤ {CAS_P99_RATIO_LIMIT}", verdict(cas_ratio, CAS_P99_RATIO_LIMIT)])
    rows += [_run_start_row(c, "B", AT_ONCE), *past_target_rows(results), tables_target_row(results, RESULTS)]
    rows += [_run_start_row(c, "O", EARLIER_TARGET), _ratio_row(r, "B/F", EARLIER_TARGET, c, days), *scale_earlier,
             _ratio_row(r, "O/N", EARLIER_TARGET, c), *_earlier_rows(c, m)]
    return table(["figure", "group", f"earlier ({EARLIER_RUN}) / beside", "measured", "target", "verdict"], rows)
