"""The scale curve's sections of docs/BENCHMARKS.md: its target rows, the per-size table, B against the floor at each
size (B/F in CPU and in wall, B/F2 in wall), and each contender's growth against Airflow's."""

from __future__ import annotations

from .scale import OURS, SCALE_CONTENDERS, SCALE_MAX_DAYS, b_over_f, marginal_b_vs_f, slope_of
from .tables import table, verdict

# The targets table's "group" of a row: what its target asks for.
NEAR_THE_FLOOR = "batches near the floor"  # the default path (B) against the plain loop (F, F2)
EARLIER_TARGET = "earlier target"  # a target set before the current ones, still tracked
# B against the floor on the curve, at each of these sizes it has (else at its largest): B/F in CPU and B/F2 in wall
# (the targets), B/F in wall (the earlier target, at 365 days).
TARGET_DAYS = (20, 365)
B_OVER_F_CPU_LIMIT = 2.0
B_OVER_F2_LIMIT = 2.0
B_OVER_F_LARGEST_LIMIT = 2.0  # earlier target: B/F in wall at the curve's largest size
SLOPE_RATIO_LIMIT = 2.0  # B's marginal cost per day <= 2x F's: in CPU (the target), in wall (the earlier one)


def _growth_row(growth: dict, name: str) -> list:
    g = growth.get(name) or {}
    span = g.get("a_span") or g.get("days") or []
    label = f"{span[0]}→{span[-1]} d" if len(span) > 1 else "curve"
    a_growth = g.get("a_growth_same_sizes")
    measured = g.get("growth_over_a_span", g.get("growth"))
    if not g:
        result = "not measured (`make bench-scale`)"
    elif a_growth is None:
        result = "not measured (A not on the curve)"
    else:
        result = verdict(measured, a_growth)
    return [f"scale: wall growth {label} ({name})", EARLIER_TARGET, "", measured,
            f"≤ A's ({a_growth if a_growth is not None else '-'})", result]


def _at_target_sizes(rows: list[dict], key: str) -> list[dict]:
    """The rows of b_over_f with ``key`` measured at the sizes the targets name, else the largest one that has it."""
    have = [r for r in rows if r.get(key) is not None]
    return [r for r in have if r["days"] in TARGET_DAYS] or have[-1:]


def _floor_rows(rows: list[dict], key: str, figure: str, limit: float, group: str, missing: str) -> list[list]:
    """One row per size of ``_at_target_sizes`` (one "not measured" row at 365 days when there is none)."""
    at = _at_target_sizes(rows, key)
    if not at:
        return [[figure.format(days=TARGET_DAYS[-1]), group, "", None, f"≤ {limit:g}", missing]]
    return [[figure.format(days=r["days"]), group, "", r[key], f"≤ {limit:g}", verdict(r[key], limit)] for r in at]


def scale_target_rows(results: dict) -> tuple[list[list], list[list]]:
    """(current, earlier) target rows of the curve. Current (batches near the floor): B/F in CPU and B/F2 in wall at
    20 and 365 days (the sizes the curve has; else its largest), B's marginal CPU per day against F's. Earlier: B/F
    in wall at the largest size, B's marginal wall per day against F's, our growth against Airflow's."""
    scale = results.get("scale") or {}
    growth = scale.get("growth") or {}
    rows = b_over_f(scale.get("points") or [])
    missing = "not measured" if scale else "not measured (`make bench-scale`)"
    f2_missing = "not measured (F2 not on the curve)" if scale else missing
    m = marginal_b_vs_f(growth)
    current = [
        *_floor_rows(rows, "b_over_f_cpu", "B/F in CPU at {days} d (scale curve)", B_OVER_F_CPU_LIMIT,
                     NEAR_THE_FLOOR, missing),
        *_floor_rows(rows, "b_over_f2", "B/F2 in wall at {days} d (scale curve)", B_OVER_F2_LIMIT, NEAR_THE_FLOOR,
                     f2_missing),
        ["B's marginal CPU per day / F's (least-squares slopes of CPU s over the scale curve's sizes)",
         NEAR_THE_FLOOR, "", m["cpu_ratio"], f"≤ {SLOPE_RATIO_LIMIT:g}",
         verdict(m["cpu_ratio"], SLOPE_RATIO_LIMIT) if m["cpu_ratio"] is not None else missing],
    ]
    largest = [r for r in rows if r["b_over_f"] is not None][-1:]
    earlier = [
        *_floor_rows(largest, "b_over_f", "B/F in wall at {days} d (scale curve)", B_OVER_F_LARGEST_LIMIT,
                     EARLIER_TARGET, missing),
        ["B's marginal wall per day / F's (least-squares slopes of wall s over the scale curve's sizes)",
         EARLIER_TARGET, "", m["ratio"], f"≤ {SLOPE_RATIO_LIMIT:g}",
         verdict(m["ratio"], SLOPE_RATIO_LIMIT) if m["ratio"] is not None else missing],
    ]
    return current, earlier + [_growth_row(growth, name) for name in OURS]


def _first_text(details: dict):
    return details.get("first_run_start_s", details.get("first_task_after_return_s", details.get(
        "first_task_start_s")))


def _size_rows(points: list[dict], growth: dict, name: str) -> list[list]:
    rows, previous = [], None
    for point in points:
        c = point["contenders"].get(name)
        if c is None:
            continue
        chk = c["check"]
        slope = round((c["wall_s"] - previous[1]) / (point["days"] - previous[0]), 2) if previous else ""
        smallest = growth[name]["wall_s"][0]
        rows.append([f"**{name}**", point["days"], round(c["wall_s"], 1), round(c["cpu_s"], 1), c["runs"],
                     _first_text(c["details"]), slope, round(c["wall_s"] / smallest, 2) if smallest else None,
                     f"{chk['days']} d, {chk['orders']:,} orders, {chk['revenue_cny']:,.2f} CNY"])
        previous = (point["days"], c["wall_s"])
    return rows


def _bold(value) -> str:
    return "" if value is None else f"**{value}**"


def _b_versus_f(scale: dict) -> list[str]:
    rows = [[r["days"], r["b_cpu_s"], r["f_cpu_s"], _bold(r["b_over_f_cpu"]), r["b_wall_s"], r["f2_wall_s"],
             _bold(r["b_over_f2"]), r["f_wall_s"], r["b_over_f"]] for r in b_over_f(scale["points"])]
    if not rows:
        return []
    m = marginal_b_vs_f(scale.get("growth") or {})
    f2 = f", F2 {m['f2_slope_s_per_day']} s/day" if m["f2_slope_s_per_day"] is not None else ""
    return ["", "B (ours, default path) against the floor at each size: in CPU against F (the plain loop, one "
            f"process; target ≤ {B_OVER_F_CPU_LIMIT:g}), in wall against F2 (the same loop on two processes at once, "
            f"as B runs on both cores; target ≤ {B_OVER_F2_LIMIT:g}), and in wall against F (the earlier target). "
            "Their marginal cost per day (least-squares slope over all their sizes), in CPU: B "
            f"{m['b_cpu_slope_s_per_day']} s/day, F {m['f_cpu_slope_s_per_day']} s/day, B/F **{m['cpu_ratio']}** "
            f"(target ≤ {SLOPE_RATIO_LIMIT:g}); in wall: B {m['b_slope_s_per_day']} s/day, F "
            f"{m['f_slope_s_per_day']} s/day{f2}, B/F {m['ratio']}.", "",
            *table(["days", "B CPU s", "F CPU s", "B/F CPU", "B wall s", "F2 wall s", "B/F2 wall", "F wall s",
                    "B/F wall"], rows)]


def _summary_rows(growth: dict, names: list[str]) -> list[list]:
    rows = []
    for name in names:
        g = growth[name]
        vs_a = g.get("growth_vs_a")
        if name not in OURS:
            result = ""  # the targets are ours; F, A and N are the references
        else:
            result = "not measured (A not on the curve)" if vs_a is None else verdict(vs_a, 1.0)
        span = g.get("a_span")
        rows.append([f"**{name}**", f"{g['days'][0]}→{g['days'][-1]}", g["growth"], g["cpu_growth"],
                     g["slope_s_per_day"], slope_of(growth, name, "cpu_slope_s_per_day"),
                     f"{span[0]}→{span[1]}" if span else "",
                     g.get("a_growth_same_sizes", ""), vs_a if vs_a is not None else "", g.get("slope_vs_a", ""),
                     result])
    return rows


def scale_section(scale: dict) -> list[str]:
    """The scale curve: every contender at every size, B against F, then each one's growth against Airflow's."""
    points, growth = scale["points"], scale.get("growth") or {}
    names = [n for n in SCALE_CONTENDERS if n in growth]
    rows = [row for name in names for row in _size_rows(points, growth, name)]
    lines = table(["contender", "days", "wall s", "CPU s", "runs", "first run/task started after s",
                   "s/day since the previous size", "wall vs its smallest size", "cross-check (daily_revenue)"], rows)
    agree = "; ".join(f"{p['days']} d: **{p['checks_agree']}**" for p in points)
    lines += ["", f"Cross-check at each size (every contender of that size: same days, orders and revenue): {agree}."]
    lines += _b_versus_f(scale)
    lines += ["", "Growth of each contender, and against Airflow's over the sizes both ran (ours must grow no "
              "faster):", ""]
    lines += table(["contender", "days", "wall growth (largest / smallest)", "CPU growth",
                    "slope s/day (least squares)", "CPU slope s/day", "sizes shared with A",
                    "A's wall growth, same sizes", "growth / A's", "slope / A's", "grows no faster than A"],
                   _summary_rows(growth, names))
    return lines


def on_the_curve(scale: dict) -> str:
    """``F, F2, B at every size; O and A up to 120 days; N up to 40`` for the contenders this curve has."""
    growth = scale.get("growth") or {}
    every = [n for n in SCALE_CONTENDERS if n in growth and n not in SCALE_MAX_DAYS]
    capped = [f"{n} up to {SCALE_MAX_DAYS[n]} days" for n in SCALE_CONTENDERS if n in growth and n in SCALE_MAX_DAYS]
    parts = [f"{', '.join(every)} at every size"] if every else []
    return "; ".join(parts + capped) or "no contender"
