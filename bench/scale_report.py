"""The scale curve's sections of docs/BENCHMARKS.md: its target rows, the per-size table, B against the floor at each
size, and each contender's growth against Airflow's."""

from __future__ import annotations

from .scale import OURS, SCALE_CONTENDERS, SCALE_MAX_DAYS, b_over_f, marginal_b_vs_f
from .tables import table, verdict

# The targets table's "group" of a row: what its target asks for.
NEAR_THE_FLOOR = "batches near the floor"  # the default path (B) against the plain loop (F)
EARLIER_TARGET = "earlier target"  # a target set before the current ones, still tracked
B_OVER_F_LARGEST_LIMIT = 2.0  # B/F at the curve's largest size (365 days)
SLOPE_RATIO_LIMIT = 2.0  # B's marginal cost per day <= 2x F's


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


def scale_target_rows(results: dict) -> list[list]:
    """B/F at the largest size and B's slope against F's (batches near the floor); then the earlier target: our
    growth against Airflow's."""
    scale = results.get("scale") or {}
    growth = scale.get("growth") or {}
    ratios = b_over_f(scale.get("points") or [])
    largest = ratios[-1] if ratios else {}
    size = f"{largest['days']} d" if largest else "365 d"
    missing = "not measured (`make bench-scale`)"
    b_f = largest.get("b_over_f")
    rows = [[f"B/F at {size} (scale curve)", NEAR_THE_FLOOR, "", b_f, f"≤ {B_OVER_F_LARGEST_LIMIT:g}",
             verdict(b_f, B_OVER_F_LARGEST_LIMIT) if largest else missing]]
    m = marginal_b_vs_f(growth)
    rows.append(["B's marginal cost per day / F's (least-squares slopes of the scale curve)", NEAR_THE_FLOOR,
                 "", m["ratio"], f"≤ {SLOPE_RATIO_LIMIT:g}",
                 verdict(m["ratio"], SLOPE_RATIO_LIMIT) if m["ratio"] is not None else missing])
    return rows + [_growth_row(growth, name) for name in OURS]


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


def _b_versus_f(scale: dict) -> list[str]:
    rows = [[r["days"], r["b_wall_s"], r["f_wall_s"], f"**{r['b_over_f']}**"] for r in b_over_f(scale["points"])]
    if not rows:
        return []
    m = marginal_b_vs_f(scale.get("growth") or {})
    return ["", "B (ours, default path) against the floor F at each size, and their marginal cost per day "
            f"(least-squares slope over all their sizes): B {m['b_slope_s_per_day']} s/day, F "
            f"{m['f_slope_s_per_day']} s/day, B/F **{m['ratio']}** (target ≤ {SLOPE_RATIO_LIMIT:g}).", "",
            *table(["days", "B wall s", "F wall s", "B/F"], rows)]


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
                     g["slope_s_per_day"], f"{span[0]}→{span[1]}" if span else "",
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
                    "slope s/day (least squares)", "sizes shared with A", "A's wall growth, same sizes",
                    "growth / A's", "slope / A's", "grows no faster than A"], _summary_rows(growth, names))
    return lines


def on_the_curve(scale: dict) -> str:
    """``F, B at every size; O and A up to 120 days; N up to 40`` for the contenders this curve has."""
    growth = scale.get("growth") or {}
    every = [n for n in SCALE_CONTENDERS if n in growth and n not in SCALE_MAX_DAYS]
    capped = [f"{n} up to {SCALE_MAX_DAYS[n]} days" for n in SCALE_CONTENDERS if n in growth and n in SCALE_MAX_DAYS]
    parts = [f"{', '.join(every)} at every size"] if every else []
    return "; ".join(parts + capped) or "no contender"
