"""Ratios between contenders and docs/BENCHMARKS.md, regenerated from one results file.

The hand-written analysis (``bench/where_the_time_goes.md``) is included as it is, after the generated tables.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RATIOS = (("O", "A", 1.0), ("B", "A", 0.5), ("O", "N", 0.5), ("B", "N", 0.1), ("B", "F", 3.0))
ANALYSIS = Path(__file__).resolve().parent / "where_the_time_goes.md"
REPORTED_ELSEWHERE = [
    ("Airflow 3.3.2 `backfill create`, LocalExecutor, PostgreSQL", "10 intervals", "14.3 s"),
    ("Airflow 3.3.2 `backfill create`, LocalExecutor, PostgreSQL", "30 intervals", "36.5 s"),
    ("Dagster 1.13.27 asset backfill, one run per day", "10 partitions", "87 s"),
    ("Dagster 1.13.27 asset backfill, one run per day", "30 partitions", "147 s"),
    ("Dagster 1.13.27 asset backfill, `BackfillPolicy.single_run()`", "10 / 30 partitions", "57 s / 52 s"),
]


def ratios(contenders: dict) -> dict:
    """Wall-time ratios of contenders measured in the same run (None when one side was not run)."""
    out = {}
    for a, b, _target in RATIOS:
        if a in contenders and b in contenders and contenders[b]["wall_s"]:
            out[f"{a}/{b}"] = round(contenders[a]["wall_s"] / contenders[b]["wall_s"], 3)
        else:
            out[f"{a}/{b}"] = None
    return out


def _verdict(value, limit, lower_is_better: bool = True) -> str:
    if value is None:
        return "not measured"
    return "met" if (value <= limit if lower_is_better else value >= limit) else "**missed**"


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in rows]
    return lines


def _macro(results: dict) -> list[str]:
    rows = []
    for name, c in results["contenders"].items():
        d, chk = c["details"], c["check"]
        first = d.get("first_run_start_s", d.get("first_task_start_s"))
        rows.append([f"**{name}** {c['title']}", round(c["wall_s"], 1), round(c["cpu_s"], 1), round(c["peak_rss_mb"]),
                     round(c["peak_process_rss_mb"]), c["runs"], first,
                     f"{chk['days']} d, {chk['orders']:,} orders, {chk['revenue_cny']:,.2f} CNY"])
    return _table(["contender", "wall s", "CPU s", "peak RSS MB (all processes)", "largest process MB", "runs",
                   "first run/task started after s", "cross-check (daily_revenue)"], rows)


def _targets(results: dict) -> list[str]:
    c, m, r = results["contenders"], results.get("micro") or {}, results["ratios"]
    rows = [[f"{a}/{b}", r.get(f"{a}/{b}"), f"≤ {t}", _verdict(r.get(f"{a}/{b}"), t)] for a, b, t in RATIOS]
    first = c.get("O", {}).get("details", {}).get("first_run_start_s")
    rows.append(["O: first run started after (s)", first, "≤ 5", _verdict(first, 5)])
    if "O" in c and "B" in c:
        rss = round(c["B"]["peak_process_rss_mb"] / c["O"]["peak_process_rss_mb"], 2)
        rows.append(["largest process RSS, B (K=K) / O (K=1)", rss, "≤ 1.5", _verdict(rss, 1.5)])
    if m:
        p99 = m["publish_cas"]["cas"]["p99_ms"]
        rows.append(["publish CAS p99 ms (PostgreSQL, 8 publishers)", p99, "< 20", _verdict(p99, 20)])
        cas_ratio = m["publish_cas"].get("p99_ratio")
        rows.append(["publish CAS p99 / baseline p99 (same run; issue 13)", cas_ratio, "≤ 2", _verdict(cas_ratio, 2)])
        plan = m["plan_10y"]["dry_run_total_s"]
        rows.append(["10-year x 5-asset create + dry run s", plan, "< 1", _verdict(plan, 1)])
        for backend in ("sqlite", "postgresql"):
            rec = m["reconcile_10k"][backend]["seconds"]
            rows.append([f"reconcile 10,000 versions s ({backend})", rec, "< 2", _verdict(rec, 2)])
            prop = m["propagation_10k"][backend]
            rows.append([f"propagation over 10,000 events s ({backend}, {prop['evaluations']} evaluations)",
                         prop["all_events_s"], "< 2", _verdict(prop["all_events_s"], 2)])
    return _table(["target (issue 6)", "measured", "target", "verdict"], rows)


def _micro(m: dict) -> list[str]:
    cas = m["publish_cas"]
    lines = [f"**Publish CAS**, PostgreSQL, {cas['publishers']} concurrent publisher processes, "
             f"{cas['publishes']} publishes (each a real CAS superseding the previous version):", ""]
    columns = ("p50_ms", "p99_ms", "mean_ms", "max_ms", "per_second")
    lines += _table(["", "p50 ms", "p99 ms", "mean ms", "max ms", "per second"], [
        ["publish (lock + CAS + states + log)", *(cas["cas"][k] for k in columns)],
        ["baseline: UPDATE one row + INSERT one row", *(cas["baseline_update_insert"][k] for k in columns)],
        ["ratio", cas["p50_ratio"], cas["p99_ratio"], "", "", ""],
    ])
    lines += ["", "**Current-version lookup** (`Catalog.current`, 2,000 random cells of 10,000 versions) vs a plain "
              "SELECT of one `versions` row by primary key:", ""]
    rows = []
    for backend, v in m["current_lookup"].items():
        rows.append([backend, v["current"]["p50_ms"], v["current"]["p99_ms"], v["baseline_select_by_pk"]["p50_ms"],
                     v["baseline_select_by_pk"]["p99_ms"], v["p50_ratio"], v["p99_ratio"]])
    lines += _table(["backend", "current p50 ms", "current p99 ms", "PK select p50 ms", "PK select p99 ms",
                     "p50 ratio", "p99 ratio"], rows)
    p = m["plan_10y"]
    lines += ["", f"**Create + dry run, 10 years x 5 assets** ({p['partitions']} days, {p['cells']} cells, "
              f"{p['creates']} would be created): build_spec {p['build_spec_s']} s, facts {p['facts_s']} s, "
              f"decide {p['decide_s']} s — **{p['dry_run_total_s']} s** in all; storing the request "
              f"(`Ledger.create`, cells and claims, SQLite) {p['ledger_create_s']} s.", ""]
    rows = []
    for backend in ("sqlite", "postgresql"):
        rec, prop = m["reconcile_10k"][backend], m["propagation_10k"][backend]
        rows.append([backend, rec["seconds"], rec["stale_downstream"], prop["first_evaluation_s"],
                     prop["evaluations"], prop["all_events_s"]])
    lines += _table(["backend", "reconcile 10,000 versions s", "stale downstream cells listed",
                     "propagation: one evaluation (1,000 events) s", "evaluations for 10,000 events",
                     "propagation: all 10,000 events s"], rows)
    return lines


def _breakdown(results: dict) -> list[str]:
    lines = []
    names = [n for n in ("O", "B", "N") if n in results["contenders"]]
    if not names:
        return lines
    phases = list(results["contenders"][names[0]]["details"]["breakdown"])[1:]
    rows = []
    for phase in phases:
        row = [phase]
        for n in names:
            s = results["contenders"][n]["details"]["breakdown"].get(phase, {})
            row.append(f"{s['median_s']} / {s['total_s']} (n={s['n']})" if s.get("n") else "-")
        rows.append(row)
    lines += ["Per-run phases from the Dagster event log (median s / total s over all runs):", ""]
    lines += _table(["phase", *[f"{n}" for n in names]], rows)
    lines += ["", "Driver reaction is measured for a steady stream of runs (O); B's few runs wait for each other "
              "(finding 3), and N has no driver (its backfill daemon queues every run at once)."]
    for n in ("O", "B"):
        ticks = results["contenders"].get(n, {}).get("details", {}).get("sensor_ticks")
        if not ticks:
            continue
        lines += ["", f"Sensor ticks during {n} (all in one sensor daemon loop):", ""]
        lines += _table(["sensor", "ticks", "duration median s", "duration max s", "spacing median s"], [
            [name, t["ticks"], t["duration"].get("median_s"), t["duration"].get("max_s"), t["spacing"].get("median_s")]
            for name, t in ticks.items()])
    return lines


def write_report(results: dict, path: Path) -> None:
    m, s = results["machine"], results["sizes"]
    pkgs = ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v)
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`python -m bench.run`) from "
        f"`bench/results/{results['timestamp']}.json`; do not edit by hand (the analysis at the end comes from "
        "`bench/where_the_time_goes.md`).",
        "",
        "The same backfill done five ways, one after the other on one machine, each on a fresh DAGSTER_HOME / "
        "AIRFLOW_HOME / output folder under a temporary directory, all reading one seeded SQLite source "
        "(`SourceSystem.seed`) by interval and writing one Parquet file per asset and day with the project's "
        "transform functions. Graph: `raw_orders -> order_facts -> daily_revenue`. Left out: `customer_snapshot` "
        "(depends on the past, so it can neither run days in parallel nor batch) and `revenue_alert` (a side "
        "effect). At most "
        f"{s['max_active']} runs at once everywhere.",
        "",
        "- **F** floor: the transforms in a plain Python loop (own process); no orchestration, checks or catalog.",
        "- **N** naive Dagster: `bench/naive/definitions.py`, an IO manager overwriting each partition in place, "
        "Dagster's own asset backfill (GraphQL `launchPartitionBackfill`) run by dagster-daemon; same "
        "`dagster.yaml` as ours with `max_concurrent_runs: 2`.",
        "- **A** Airflow 3: `bench/airflow/dags/bench_orders.py`, `airflow backfill create --max-active-runs 2`, "
        "LocalExecutor (parallelism 2), metadata on PostgreSQL, api-server on 127.0.0.1, scheduler "
        "`--skip-serve-logs`, cron runs off (`use_job_schedule=False`) so only the backfill runs.",
        "- **O** ours: `backfill-assets request create --reprocess completed --max-active 2` on an empty catalog, "
        "carried out by the driver sensor in dagster-daemon, one interval (3 assets) per run, every asset-day "
        "written, audited by 5 blocking checks and published by CAS; queue-ahead (one run queued behind each "
        "running one, `backfill/slot`).",
        f"- **B** ours batched: the same request with `--partitions-per-run {s['partitions_per_run']}`: chunk runs "
        "(job `backfill_chunk`) of consecutive days covering all three assets, the days spread over the "
        f"{s['max_active']} run slots; still one version, 5 checks and one CAS per asset-day.",
        "",
        "Wall time runs from the submission (the CLI command, the GraphQL launch) to the last day being done "
        "(request closed, backfill COMPLETED, every DAG run finished); services are started and ready before. CPU "
        "and memory: every process of the contender (services, their workers, the submitting CLI; for Airflow also "
        "the PostgreSQL backends of its database), sampled every 0.2 s (`bench/measure.py`).",
        "",
        "## Machine and sizes",
        "",
        f"- {m['nproc']} cores, {m['ram_gb']} GB RAM, {m['os']}, Python {m['python']}, PostgreSQL {m['postgresql']}",
        f"- {pkgs}",
        f"- {s['days']} days ({s['first_day']}..{s['last_day']}) x {s['orders_per_day']:,} orders/day; "
        f"max {s['max_active']} runs at once; B batches {s['partitions_per_run']} days per run",
        f"- command: `{results['command']}`; whole benchmark {results['total_s']} s; source seeded in "
        f"{(results.get('seed') or {}).get('seconds')} s ({(results.get('seed') or {}).get('rows')} rows)",
        "",
        "## Backfill, side by side",
        "",
        *_macro(results),
        "",
        f"Cross-check: every contender ended with the same days, orders and revenue: **{results['checks_agree']}**.",
        "",
        "## Ratios and targets",
        "",
        "Ratios are wall-time ratios of contenders measured in this same run.",
        "",
        *_targets(results),
        "",
    ]
    if results.get("micro"):
        lines += ["## Micro-benchmarks", "", *_micro(results["micro"]), ""]
    lines += ["## Reported elsewhere (issue 6, for reference; not measured here)", "",
              *_table(["system", "size", "wall"], [list(r) for r in REPORTED_ELSEWHERE]),
              "", "Those runs used a trivial task; the figures above run the real transforms on the sizes listed.", ""]
    lines += ["## Where the time goes", "", *_breakdown(results), ""]
    if ANALYSIS.exists():
        lines += [ANALYSIS.read_text().strip(), ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    # Re-render the document from a stored results file: python -m bench.report bench/results/<stamp>.json
    source = Path(sys.argv[1])
    target = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"
    write_report(json.loads(source.read_text()), target)
    print(f"wrote {target}")
