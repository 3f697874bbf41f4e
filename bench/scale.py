"""The scale curve's arithmetic: which contenders run at which size, each one's growth and marginal cost per day
(least-squares slope), its growth against Airflow's over the sizes both ran, and B/F at each size."""

from __future__ import annotations

# The largest size each contender runs on the curve; F and B run every size (365 days: the target on B/F at the
# largest size). N at ~4-12 s of wall per day on 2 cores would add ~25 min at 120 days; O (~1.4 s/day) and A
# (~3 s/day) would add ~6 and ~13 min at 365.
SCALE_MAX_DAYS = {"N": 40, "A": 120, "O": 120}
NAIVE_SCALE_MAX_DAYS = SCALE_MAX_DAYS["N"]
SCALE_CONTENDERS = ("F", "N", "A", "O", "B")
OURS = ("O", "B")  # the contenders the curve judges; F, A and N are references


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
    per-day slope (least squares, s/day), and against A's over the sizes both ran."""
    walls, cpus = _series(points, "wall_s"), _series(points, "cpu_s")
    out = {}
    for name, wall in walls.items():
        days = sorted(wall)
        slope = _slope([float(d) for d in days], [wall[d] for d in days])
        entry = {
            "days": days,
            "wall_s": [wall[d] for d in days],
            "cpu_s": [cpus[name][d] for d in days],
            "growth": _growth(wall, days[0], days[-1]),
            "cpu_growth": _growth(cpus[name], days[0], days[-1]),
            "slope_s_per_day": None if slope is None else round(slope, 3),
        }
        if name not in ("A", "F") and "A" in walls:
            entry.update(_against_a(wall, walls["A"]))
        out[name] = entry
    return out


def b_over_f(points: list[dict]) -> list[dict]:
    """B's wall over F's at every size both ran."""
    rows = []
    for point in points:
        b, f = point["contenders"].get("B"), point["contenders"].get("F")
        if b and f and f["wall_s"]:
            rows.append({"days": point["days"], "b_wall_s": b["wall_s"], "f_wall_s": f["wall_s"],
                         "b_over_f": round(b["wall_s"] / f["wall_s"], 3)})
    return rows


def marginal_b_vs_f(growth: dict) -> dict:
    """B's and F's marginal cost per day (least-squares slope over all their sizes) and the ratio."""
    b = (growth.get("B") or {}).get("slope_s_per_day")
    f = (growth.get("F") or {}).get("slope_s_per_day")
    return {"b_slope_s_per_day": b, "f_slope_s_per_day": f, "ratio": round(b / f, 2) if b is not None and f else None}
