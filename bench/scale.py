"""The scale curve: each contender's wall and CPU over several sizes, its growth against Airflow's, and its
sections of docs/BENCHMARKS.md (the curve's target rows, the per-size table, the growth summary)."""

from __future__ import annotations

from .tables import table as _table
from .tables import verdict as _verdict

# N is on the scale curve only up to this many days: at ~12 s of wall per day on 2 cores (20 days: 240 s), 120
# days would add ~25 min to the curve.
NAIVE_SCALE_MAX_DAYS = 40

OURS = ("O", "B")  # the contenders the curve judges; A and N are references


def _slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys over xs (None below two points)."""
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else None


def _growth(series: dict[int, float], lo: int, hi: int) -> float | None:
    if lo == hi or lo not in series or hi not in series or not series[lo]:
        return None
    return round(series[hi] / series[lo], 2)


def scale_growth(points: list[dict]) -> dict:
    """Per contender of the scale curve: its sizes, wall and CPU at each, growth (largest / smallest size), the
    per-day slope (least squares, s/day), and A's growth over the same sizes with the ratio of the two."""
    walls: dict[str, dict[int, float]] = {}
    cpus: dict[str, dict[int, float]] = {}
    for point in points:
        for name, c in point["contenders"].items():
            walls.setdefault(name, {})[point["days"]] = c["wall_s"]
            cpus.setdefault(name, {})[point["days"]] = c["cpu_s"]
    out = {}
    for name, wall in walls.items():
        days = sorted(wall)
        lo, hi = days[0], days[-1]
        slope = _slope([float(d) for d in days], [wall[d] for d in days])
        entry = {
            "days": days,
            "wall_s": [wall[d] for d in days],
            "cpu_s": [cpus[name][d] for d in days],
            "growth": _growth(wall, lo, hi),
            "cpu_growth": _growth(cpus[name], lo, hi),
            "slope_s_per_day": None if slope is None else round(slope, 3),
        }
        if name != "A" and "A" in walls:
            a_growth = _growth(walls["A"], lo, hi)
            shared = [d for d in days if d in walls["A"]]
            a_slope = _slope([float(d) for d in shared], [walls["A"][d] for d in shared])
            entry["a_growth_same_sizes"] = a_growth
            entry["growth_vs_a"] = round(entry["growth"] / a_growth, 2) if entry["growth"] and a_growth else None
            entry["slope_vs_a"] = round(slope / a_slope, 2) if slope is not None and a_slope else None
        out[name] = entry
    return out


def scale_target_rows(results: dict) -> list[list]:
    growth = (results.get("scale") or {}).get("growth") or {}
    rows = []
    for name in ("O", "B"):
        g = growth.get(name) or {}
        days = g.get("days") or []
        span = f"{days[0]}→{days[-1]} d" if len(days) > 1 else "curve"
        a_growth = g.get("a_growth_same_sizes")
        measured = g.get("growth")
        if not g:
            verdict = "not measured (`make bench-scale`)"
        elif a_growth is None:
            verdict = "not measured (A not on the curve)"
        else:
            verdict = _verdict(measured, a_growth)
        rows.append([f"scale: wall growth {span} ({name})", 13, "", measured,
                     f"≤ A's ({a_growth if a_growth is not None else '-'})", verdict])
    return rows


def scale_section(scale: dict) -> list[str]:
    """The scale curve: every contender at every size, then each one's growth against Airflow's."""
    points, growth = scale["points"], scale.get("growth") or {}
    rows = []
    names = [n for n in ("N", "A", "O", "B") if n in growth]
    for name in names:
        previous = None
        for point in points:
            c = point["contenders"].get(name)
            if c is None:
                continue
            d, chk = c["details"], c["check"]
            first = d.get("first_run_start_s", d.get("first_task_start_s"))
            slope = (round((c["wall_s"] - previous[1]) / (point["days"] - previous[0]), 2) if previous else "")
            smallest = growth[name]["wall_s"][0]
            rows.append([f"**{name}**", point["days"], round(c["wall_s"], 1), round(c["cpu_s"], 1), c["runs"], first,
                         slope, round(c["wall_s"] / smallest, 2) if smallest else None,
                         f"{chk['days']} d, {chk['orders']:,} orders, {chk['revenue_cny']:,.2f} CNY"])
            previous = (point["days"], c["wall_s"])
    lines = _table(["contender", "days", "wall s", "CPU s", "runs", "first run/task started after s",
                    "s/day since the previous size", "wall vs its smallest size", "cross-check (daily_revenue)"], rows)
    agree = "; ".join(f"{p['days']} d: **{p['checks_agree']}**" for p in points)
    lines += ["", f"Cross-check at each size (every contender of that size: same days, orders and revenue): {agree}.",
              "", "Growth of each contender, and against Airflow's over the same sizes (ours must grow no faster):", ""]
    summary = []
    for name in names:
        g = growth[name]
        vs_a = g.get("growth_vs_a")
        if name not in OURS:
            verdict = ""  # the targets are ours; A and N are the references
        else:
            verdict = "not measured (A not on the curve)" if vs_a is None else _verdict(vs_a, 1.0)
        summary.append([f"**{name}**", f"{g['days'][0]}→{g['days'][-1]}", g["growth"], g["cpu_growth"],
                        g["slope_s_per_day"], g.get("a_growth_same_sizes", ""), vs_a if vs_a is not None else "",
                        g.get("slope_vs_a", ""), verdict])
    lines += _table(["contender", "days", "wall growth (largest / smallest)", "CPU growth", "slope s/day (least "
                     "squares)", "A's wall growth, same sizes", "growth / A's", "slope / A's",
                     "grows no faster than A"], summary)
    return lines


def on_the_curve(scale: dict) -> str:
    names = [n for n in ("A", "O", "B") if n in (scale.get("growth") or {})]
    return ", ".join(names) or "no contender"
