"""Percentiles of latency samples, in milliseconds."""

from __future__ import annotations

import statistics


def latency(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    if not ms:
        return {"n": 0}

    def pct(p: float) -> float:
        return round(ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))], 3)

    return {"n": len(ms), "p50_ms": pct(50), "p90_ms": pct(90), "p99_ms": pct(99),
            "mean_ms": round(statistics.fmean(ms), 3), "max_ms": round(ms[-1], 3)}


def ratio(a: dict, b: dict, key: str) -> float | None:
    return round(a[key] / b[key], 2) if a.get(key) and b.get(key) else None
