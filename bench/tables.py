"""Markdown tables and met/missed verdicts, shared by the benchmark's report sections."""

from __future__ import annotations


def verdict(value, limit, lower_is_better: bool = True) -> str:
    if value is None:
        return "not measured"
    return "met" if (value <= limit if lower_is_better else value >= limit) else "**missed**"


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return lines
