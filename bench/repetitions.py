"""Repetitions of the side-by-side run: the interleaved order, and one contender's repetitions summed up.

Every contender runs ``reps`` times, the order reversed every other round (F,N,A,O,B then B,O,A,N,F, ...), so that
no contender always runs first or last (a warm page cache, another user's work on the shared cores). A contender's
figure is the median over its repetitions; its spread (min, max, each value) is kept beside it. The event-log
breakdown and the other details come from the repetition whose wall is the median one (the lower of the two middle
ones for an even count), with the per-run phases' medians replaced by the median over all repetitions.
"""

from __future__ import annotations

import statistics

# Top-level figures of a contender's outcome, and the details, that are summed up as medians over repetitions.
FIGURES = ("wall_s", "cpu_s", "peak_rss_mb", "peak_process_rss_mb", "runs")
DETAIL_FIGURES = ("first_run_start_s", "first_run_after_invocation_s", "first_task_start_s",
                  "first_task_after_return_s", "create_command_s", "launch_s")


def interleaved(names: list[str], reps: int) -> list[tuple[int, str]]:
    """(repetition, contender) in the order to run them: forward, then backward, and so on."""
    order = []
    for rep in range(reps):
        round_ = names if rep % 2 == 0 else list(reversed(names))
        order += [(rep, name) for name in round_]
    return order


def median(values: list) -> float | int | None:
    """The median (an int when every value and the median are whole numbers: counts of runs)."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    middle = statistics.median(present)
    whole = all(isinstance(v, int) for v in present) and float(middle).is_integer()
    return int(middle) if whole else round(middle, 3)


def _median_rep(outcomes: list[dict]) -> dict:
    ranked = sorted(outcomes, key=lambda o: o["wall_s"])
    return ranked[(len(ranked) - 1) // 2]


def _phase_medians(outcomes: list[dict], representative: dict) -> dict:
    """The representative's breakdown, each phase's median the median over repetitions of each one's median."""
    breakdown = representative.get("details", {}).get("breakdown")
    if not breakdown:
        return breakdown
    merged = dict(breakdown)
    for phase, stats in breakdown.items():
        if not isinstance(stats, dict) or not stats.get("n"):
            continue
        each = [o["details"]["breakdown"].get(phase, {}).get("median_s") for o in outcomes]
        merged[phase] = {**stats, "median_s": median(each), "median_s_each": each}
    return merged


def summarize(outcomes: list[dict]) -> dict:
    """One contender's repetitions (outcome dicts, in the order run) -> its outcome with median figures, the
    spread of each figure under ``reps``, and ``check`` the representative's cross-check."""
    representative = _median_rep(outcomes)
    summary = {**representative, "details": dict(representative.get("details", {}))}
    spread: dict = {"n": len(outcomes), "median_rep": outcomes.index(representative)}
    for key in FIGURES:
        each = [o.get(key) for o in outcomes]
        summary[key] = median(each)
        spread[key] = each
    for key in DETAIL_FIGURES:
        each = [o.get("details", {}).get(key) for o in outcomes]
        if any(v is not None for v in each):
            summary["details"][key] = median(each)
            spread[key] = each
    if "breakdown" in summary["details"]:
        summary["details"]["breakdown"] = _phase_medians(outcomes, representative)
    summary["reps"] = spread
    summary["checks_each"] = [o["check"] for o in outcomes]
    return summary


def spread_text(value, each: list | None, digits: int = 1) -> str:
    """``20.3 (19.8–21.0)``: the median and the range of the repetitions (the value alone for one)."""
    if value is None:
        return ""
    shown = round(value, digits) if digits else round(value)
    values = [v for v in (each or []) if v is not None]
    if len(values) < 2:
        return str(shown)
    lo, hi = min(values), max(values)
    fmt = (lambda v: str(round(v, digits))) if digits else (lambda v: str(round(v)))
    return f"{shown} ({fmt(lo)}–{fmt(hi)})"
