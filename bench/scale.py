"""The scale curve's arithmetic: which contenders run at which size, each one's growth and marginal cost per day
(least-squares slopes of wall and of CPU), its growth against Airflow's over the sizes both ran, and B against the
floor at each size (B/F in CPU and in wall, B/F2 in wall)."""

from __future__ import annotations

# The largest size each contender runs on the curve; F, F2 and B run every size (365 days: the targets on B against
# the floor at the largest size). N at ~4-12 s of wall per day on 2 cores would add ~25 min at 120 days; O
# (~1.4 s/day) and A (~3 s/day) would add ~6 and ~13 min at 365.
SCALE_MAX_DAYS = {"N": 40, "A": 120, "O": 120}
NAIVE_SCALE_MAX_DAYS = SCALE_MAX_DAYS["N"]
SCALE_CONTENDERS = ("F", "F2", "N", "A", "O", "B")
OURS = ("O", "B")  # the contenders the curve judges; F, F2, A and N are references
FLOORS = ("F", "F2")


def on_curve_at(name: str, days: int) -> bool:
    return days <= SCALE_MAX_DAYS.get(name, days)


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


def _series(points: list[dict], key: str) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for point in points:
        for name, c in point["contenders"].items():
            out.setdefault(name, {})[point["days"]] = c[key]
    return out


def _against_a(wall: dict[int, float], a_wall: dict[int, float]) -> dict:
    """Growth and slope against A's over the sizes both ran (smallest to largest of those)."""
    shared = sorted(d for d in wall if d in a_wall)
    if len(shared) < 2:
        return {"a_growth_same_sizes": None, "growth_vs_a": None, "slope_vs_a": None, "a_span": None}
    lo, hi = shared[0], shared[-1]
    own, a_growth = _growth(wall, lo, hi), _growth(a_wall, lo, hi)
    slope = _slope([float(d) for d in shared], [wall[d] for d in shared])
    a_slope = _slope([float(d) for d in shared], [a_wall[d] for d in shared])
    return {"a_growth_same_sizes": a_growth, "growth_vs_a": round(own / a_growth, 2) if own and a_growth else None,
            "slope_vs_a": round(slope / a_slope, 2) if slope is not None and a_slope else None,
            "a_span": [lo, hi], "growth_over_a_span": own}


def scale_growth(points: list[dict]) -> dict:
    """Per contender of the scale curve: its sizes, wall and CPU at each, growth (largest / smallest size), the
    per-day slopes of wall and of CPU (least squares, s/day), and against A's over the sizes both ran."""
    walls, cpus = _series(points, "wall_s"), _series(points, "cpu_s")
    out = {}
    for name, wall in walls.items():
        days = sorted(wall)
        slope = _slope([float(d) for d in days], [wall[d] for d in days])
        cpu_slope = _slope([float(d) for d in days], [cpus[name][d] for d in days])
        entry = {
            "days": days,
            "wall_s": [wall[d] for d in days],
            "cpu_s": [cpus[name][d] for d in days],
            "growth": _growth(wall, days[0], days[-1]),
            "cpu_growth": _growth(cpus[name], days[0], days[-1]),
            "slope_s_per_day": None if slope is None else round(slope, 3),
            "cpu_slope_s_per_day": None if cpu_slope is None else round(cpu_slope, 3),
        }
        if name not in ("A", *FLOORS) and "A" in walls:
            entry.update(_against_a(wall, walls["A"]))
        out[name] = entry
    return out


def _ratio(num: float | None, den: float | None) -> float | None:
    return round(num / den, 3) if num is not None and den else None


def b_over_f(points: list[dict]) -> list[dict]:
    """B against the floor at every size where B and F or F2 ran: B/F in wall and in CPU, B/F2 in wall (None where
    that floor did not run)."""
    rows = []
    for point in points:
        c = point["contenders"]
        b, f, f2 = c.get("B"), c.get("F") or {}, c.get("F2") or {}
        if not b or not (f or f2):
            continue
        rows.append({"days": point["days"], "b_wall_s": b["wall_s"], "f_wall_s": f.get("wall_s"),
                     "b_over_f": _ratio(b["wall_s"], f.get("wall_s")),
                     "b_cpu_s": b["cpu_s"], "f_cpu_s": f.get("cpu_s"),
                     "b_over_f_cpu": _ratio(b["cpu_s"], f.get("cpu_s")),
                     "f2_wall_s": f2.get("wall_s"), "b_over_f2": _ratio(b["wall_s"], f2.get("wall_s"))})
    return rows


def slope_of(growth: dict, name: str, key: str) -> float | None:
    """A contender's least-squares slope (``slope_s_per_day`` of wall, ``cpu_slope_s_per_day`` of CPU); results
    files from before the CPU slope was stored give it from their sizes and CPU seconds."""
    g = growth.get(name) or {}
    if key in g:
        return g[key]
    if key == "cpu_slope_s_per_day" and g.get("cpu_s"):
        slope = _slope([float(d) for d in g["days"]], g["cpu_s"])
        return None if slope is None else round(slope, 3)
    return None


def marginal_b_vs_f(growth: dict) -> dict:
    """B's and F's marginal cost per day (least-squares slopes over all their sizes) in CPU and in wall, and B's
    over F's of each; F2's wall slope beside them."""
    b, f = slope_of(growth, "B", "slope_s_per_day"), slope_of(growth, "F", "slope_s_per_day")
    b_cpu, f_cpu = slope_of(growth, "B", "cpu_slope_s_per_day"), slope_of(growth, "F", "cpu_slope_s_per_day")
    return {"b_slope_s_per_day": b, "f_slope_s_per_day": f, "ratio": round(b / f, 2) if b is not None and f else None,
            "b_cpu_slope_s_per_day": b_cpu, "f_cpu_slope_s_per_day": f_cpu,
            "cpu_ratio": round(b_cpu / f_cpu, 2) if b_cpu is not None and f_cpu else None,
            "f2_slope_s_per_day": slope_of(growth, "F2", "slope_s_per_day")}
