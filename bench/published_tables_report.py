"""docs/BENCHMARKS.md's section on what the published tables cost (``bench/published_tables.py``), and its target row.

``python -m bench.published_tables_report <results.json>`` prints the section from a results file of ``python -m
bench.published_tables`` or of ``python -m bench.run``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .tables import table, verdict

KEY = "published_tables"  # the measurement's key in a results file
DAYS = 365  # the size the cost target is judged at
REPS = 2  # runs with the tables on, and off
WALL_TARGET = 1.10  # wall on / off at DAYS
GROUP = "published for every reader"


def _each(values: list) -> str:
    return ", ".join(str(v) for v in values)


def _mode_rows(result: dict) -> list[list]:
    rows = []
    for mode, title in (("on", "Iceberg tables on (the default)"), ("off", "files only (`none`)")):
        m = result["modes"][mode]
        rows.append([title, m["wall_s"], _each(m["wall_s_each"]), m["cpu_s"], _each(m["cpu_s_each"]),
                     m["peak_rss_mb"], _each(m["status"])])
    rows.append(["**on / off**", f"**{result['wall_ratio']}**", "", f"**{result['cpu_ratio']}**", "", "", ""])
    return rows


def tables_section(result: dict, source: str | None = None) -> list[str]:
    """The section's lines: what ran, wall and CPU on and off, latency, commits, the cross-check."""
    s, lat = result["sizes"], result["latency"]
    lines = [
        f"The default request path B over {s['days']} days ({s['first_day']}..{s['last_day']}, "
        f"{s['orders_per_day']:,} orders/day) with every gated asset's Iceberg table on (the default) and off "
        f"(`BACKFILL_PUBLISHED_TABLES=none`), {result['reps']} run(s) of each, interleaved, each on a fresh home "
        "(`bench/published_tables.py`). With the tables on, each chunk step switches its asset's table every 5 s "
        "while it runs and once at its end (each switch one Iceberg snapshot for the days published since the last), "
        "and the `backfill_published_tables` sensor converges whatever is left.",
        "",
    ]
    if source:
        lines += [source, ""]
    lines += table(["", "wall s (median)", "each", "CPU s (median)", "each", "peak RSS MB", "status"],
                   _mode_rows(result))
    lines += [
        "",
        f"- **Cost:** wall on/off **{result['wall_ratio']}** (target ≤ {WALL_TARGET}: "
        f"{verdict(result['wall_ratio'], WALL_TARGET)}), CPU on/off {result['cpu_ratio']}.",
        f"- **Publish → visible in the table** (the publish-log row's time to the timestamp of the first snapshot "
        f"holding it, every publish of every run with the tables on, n = {lat.get('n')}): p50 "
        f"**{_s(lat.get('p50_ms'))}**, p90 {_s(lat.get('p90_ms'))}, p99 **{_s(lat.get('p99_ms'))}**, max "
        f"{_s(lat.get('max_ms'))}. A step publishes each day as its checks pass; the table follows at its next "
        "switch (at most 5 s later, plus the commit).",
        f"- **Commits:** {result['snapshots_per_run']} snapshots for {result['publishes_per_run']} publishes per "
        f"run (three tables); commits lost to another writer and planned again: {result['lost_commits']}; "
        f"published days missing from a table at the end: **{result['days_missing']}**.",
        f"- **Cross-check:** `daily_revenue` read from its table with pyiceberg, and the catalog's published "
        f"versions of every run, agree: **{result['checks_agree']}** ({result['check']}).",
    ]
    return lines


def _s(ms: float | None) -> str:
    return "–" if ms is None else f"{ms / 1000:.2f} s"


def target_row(results: dict, results_dir: Path) -> list:
    """The targets table's row: this run's figure, else the newest stored one, said to be from that run."""
    result, path = published_tables_result(results, results_dir)
    ratio = result["wall_ratio"] if result else None
    days = result["sizes"]["days"] if result else DAYS
    beside = f"stored run `{path.stem}`" if path is not None else ""
    return [f"published tables on / off, wall, B at {days} d", GROUP, beside, ratio, f"≤ {WALL_TARGET}",
            verdict(ratio, WALL_TARGET)]


def published_tables_result(results: dict, results_dir: Path) -> tuple[dict | None, Path | None]:
    """This run's measurement (path None), else the newest ``*-published_tables.json`` in ``results_dir``."""
    if results.get(KEY):
        return results[KEY], None
    stored = sorted(results_dir.glob(f"*-{KEY}.json"))
    if not stored:
        return None, None
    return json.loads(stored[-1].read_text())[KEY], stored[-1]


def section_for(results: dict, results_dir: Path) -> list[str]:
    """The section for a results file: this run's measurement, else the newest stored one, said to be from
    elsewhere (the document must not drop the figure when a run skipped it)."""
    result, path = published_tables_result(results, results_dir)
    if result is None:
        return []
    if path is None:
        return tables_section(result)
    stored = json.loads(path.read_text())
    stamp = stored["stamp"]
    return tables_section(result, f"Not measured in the run above: `{stored['command']}` on "
                                  f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} (results `bench/results/{path.name}`); "
                                  "`make bench` measures it again.")


if __name__ == "__main__":
    data = json.loads(Path(sys.argv[1]).read_text())
    print("\n".join(tables_section(data[KEY])))
