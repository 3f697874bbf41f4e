"""Ratios between contenders and docs/BENCHMARKS.md, regenerated from one results file.

The hand-written analysis (``bench/where_the_time_goes.md``) is included as it is, after the generated tables.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .distributed_report import KEY as CELERY_KEY
from .distributed_report import celery_section
from .past_plan import KEY as PAST_KEY
from .past_report import chain_breakdown, past_section
from .published_tables_report import section_for as published_tables_section
from .repetitions import spread_text
from .scale import SCALE_MAX_DAYS
from .scale_report import on_the_curve, scale_section
from .storage_report import KEY as WAREHOUSE_S3_VS_LOCAL
from .storage_report import storage_section
from .tables import table as _table
from .targets import CURRENT_GROUPS, EARLIER_RUN, EARLIER_TARGET, first_run, ratios, targets_table

__all__ = ["ratios", "write_report"]
ANALYSIS = Path(__file__).resolve().parent / "where_the_time_goes.md"
RESULTS = Path(__file__).resolve().parent / "results"
REPORTED_ELSEWHERE = [
    ("Airflow 3.3.2 `backfill create`, LocalExecutor, PostgreSQL", "10 intervals", "14.3 s"),
    ("Airflow 3.3.2 `backfill create`, LocalExecutor, PostgreSQL", "30 intervals", "36.5 s"),
    ("Dagster 1.13.27 asset backfill, one run per day", "10 partitions", "87 s"),
    ("Dagster 1.13.27 asset backfill, one run per day", "30 partitions", "147 s"),
    ("Dagster 1.13.27 asset backfill, `BackfillPolicy.single_run()`", "10 / 30 partitions", "57 s / 52 s"),
]


def _spread(c: dict, key: str, digits: int = 1) -> str:
    return spread_text(c.get(key), (c.get("reps") or {}).get(key), digits)


def _first_text(c: dict) -> str:
    """The first run's start after the command returned (after it was invoked; the command's seconds)."""
    d = c["details"]
    if "first_task_start_s" in d:  # Airflow: its first task
        after, invoked, command = d.get("first_task_after_return_s"), d["first_task_start_s"], d.get("create_command_s")
    else:
        after, invoked = first_run(d)
        command = d.get("create_command_s", d.get("launch_s"))
    dash = lambda v: "-" if v is None else v  # noqa: E731
    return f"{dash(after)} ({dash(invoked)}; {dash(command)})" if invoked is not None else ""


def _macro(results: dict) -> list[str]:
    rows = []
    for name, c in results["contenders"].items():
        chk = c["check"]
        rows.append([f"**{name}** {c['title']}", _spread(c, "wall_s"), _spread(c, "cpu_s"),
                     _spread(c, "peak_rss_mb", 0), _spread(c, "peak_process_rss_mb", 0), c["runs"], _first_text(c),
                     f"{chk['days']} d, {chk['orders']:,} orders, {chk['revenue_cny']:,.2f} CNY"])
    return _table(["contender", "wall s", "CPU s", "peak RSS MB (all processes)", "largest process MB", "runs",
                   "first run/task started after the command returned s (after it was invoked; the command s)",
                   "cross-check (daily_revenue)"], rows)


def _each_rep(results: dict) -> list[str]:
    """Every repetition's wall, in the order run."""
    reps = results.get("repetitions") or {}
    if not reps or results.get("reps", 1) < 2:
        return []
    rows = [[f"**{name}**", *[round(o["wall_s"], 1) for o in outcomes]] for name, outcomes in reps.items()]
    width = max(len(r) for r in rows) - 1
    return ["", "Each repetition's wall s (repetition 0 ran the contenders in the order above, 1 in the reverse "
            "order, and so on):", "",
            *_table(["contender", *[f"rep {i}" for i in range(width)]], [r + [""] * (width + 1 - len(r))
                                                                         for r in rows])]


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
    if WAREHOUSE_S3_VS_LOCAL in m:  # older results files have no such measurement
        lines += ["", *storage_section(m[WAREHOUSE_S3_VS_LOCAL])]
    if "chunk_step" in m:
        c = m["chunk_step"]
        lines += _storage_comparison(
            "A chunk run's CPU per gated asset-day",
            f"one in-process run of {c['days']} days x {c['assets']} assets, a fresh interpreter and home each",
            "chunk_step", c, "cpu_ms_per_asset_day", "ms")
    if "idle_daemon" in m:
        d = m["idle_daemon"]
        lines += _storage_comparison(
            "An idle daemon's CPU",
            f"`backfill-assets-daemon` with no request, CPU-seconds of it and its code server in {d['window_s']:.0f} s",
            "idle_daemon", d, "cpu_s", "s")
    if "process_gc" in m:
        lines += process_gc_paragraph(m["process_gc"])
    return lines


def process_gc_paragraph(m: dict) -> list[str]:
    """CPython's default collector against the one the product's processes set (bench/micro/process_gc.py)."""
    def pair(key: str, unit: str) -> str:
        default, tuned = m["default"][key], m["tuned"][key]
        return (f"default {default['median']} {unit} ({default['range'][0]}–{default['range'][1]}), "
                f"tuned {tuned['median']} {unit} ({tuned['range'][0]}–{tuned['range'][1]}): ratio "
                f"**{m[key + '_ratio']}**")

    return ["", f"**The garbage collector of the product's processes** (CPython's defaults against "
                f"`backfill_assets/process_gc.py`, {m['reps']} alternating repetitions, `python -m "
                f"bench.micro.process_gc`): importing Dagster and the orders location, CPU "
                f"{pair('import_cpu_s', 's')}; "
                f"a one-day run of {m['assets']} assets forked from that process as the warm worker forks its runs "
                f"(median of {m['days']}), CPU {pair('run_cpu_ms', 'ms')}."]


def _storage_comparison(title: str, setup: str, module: str, m: dict, value: str, unit: str) -> list[str]:
    """A micro-benchmark of Dagster's SQLite storage classes against the shipped ones, as one paragraph."""
    dagster, shipped = m["dagster"], m["shipped"]
    return ["", f"**{title}** ({setup}, {m['reps']} alternating repetitions, `python -m bench.micro.{module}`): "
            f"Dagster's SQLite storage {dagster[value]} {unit} (range {dagster['range'][0]}–{dagster['range'][1]}), "
            f"the shipped storage keeping its engines and connections {shipped[value]} {unit} "
            f"({shipped['range'][0]}–{shipped['range'][1]}): ratio **{m['ratio']}**."]


def _breakdown(results: dict) -> list[str]:
    lines = []
    names = [n for n in ("O", "B", "N") if results["contenders"].get(n, {}).get("details", {}).get("breakdown")]
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
    reps = results.get("reps", 1)
    lines += ["Per-run phases from the Dagster event log (median s / total s over all runs"
              + (f"; the median over the {reps} repetitions of each one's median, the total and n of the "
                 "repetition whose wall was the median one" if reps > 1 else "") + "):", ""]
    lines += _table(["phase", *[f"{n}" for n in names]], rows)
    lines += ["", "Driver reaction is measured for a steady stream of runs (O); B's few runs wait for each other, "
              "and N has no driver (its backfill daemon queues every run at once)."]
    for n in ("O", "B"):
        ticks = results["contenders"].get(n, {}).get("details", {}).get("sensor_ticks")
        if not ticks:
            continue
        lines += ["", f"Sensor ticks during {n} (all in one sensor daemon loop):", ""]
        lines += _table(["sensor", "ticks", "duration median s", "duration max s", "spacing median s"], [
            [name, t["ticks"], t["duration"].get("median_s"), t["duration"].get("max_s"), t["spacing"].get("median_s")]
            for name, t in ticks.items()])
    if chain := chain_breakdown(results.get(PAST_KEY) or {}):
        lines += ["", *chain]
    return lines


def _instance_text(results: dict, name: str) -> str:
    d = results["contenders"].get(name, {}).get("details", {})
    if "run_coordinator" not in d:
        return f"{name} not run" if name not in results["contenders"] else "classes not recorded"
    daemon = d.get("daemon_command")
    return f"`{d['run_coordinator']}`, `{d['run_launcher']}`" + (f"; daemon: `{daemon}`" if daemon else "")


def _pools(sizes: dict) -> str:
    limit = sizes.get("pool_limit") or 0
    return (f"our steps {limit} at once per pool (`--pool-limit {limit}`)" if limit
            else "our steps one at a time per pool (the shipped dagster.yaml)")


def _b_k(results: dict):
    return results["contenders"].get("B", {}).get("details", {}).get("partitions_per_run", "-")


def _b_flag_text(results: dict) -> str:
    flag = results["contenders"].get("B", {}).get("details", {}).get("partitions_flag")
    if flag is None:
        return "B not run"
    return f"this run passed `{flag}`" if flag.startswith("--") else "this run passed no flag: the CLI's default"


def _celery(results: dict) -> list[str]:
    """The Celery workers section: this run's (``--celery``), else the newest stored one, said to be from elsewhere:
    the default ``make bench`` does not measure it, and regenerating the document must not drop the figure."""
    if results.get(CELERY_KEY):
        return celery_section(results)
    stored = sorted(RESULTS.glob(f"*-{CELERY_KEY}.json"))
    if not stored:
        return []
    earlier = json.loads(stored[-1].read_text())
    return celery_section(earlier, f"Not measured in the run above: `{earlier['command']}` on "
                                   f"{earlier['timestamp'][:4]}-{earlier['timestamp'][4:6]}-{earlier['timestamp'][6:8]}"
                                   f" (results `bench/results/{stored[-1].name}`); `make bench BENCH_ARGS=--celery` "
                                   "measures it again.")


def _generated_by(results: dict) -> str:
    return (f"Generated by `{results['command']}` from `bench/results/{results['timestamp']}.json` (committed with "
            "it; `python -m bench.report bench/results/<stamp>.json` renders it again); do not edit by hand (the "
            "analysis at the end comes from `bench/where_the_time_goes.md`).")


def _contenders(results: dict) -> list[str]:
    s = results["sizes"]
    return [
        "- **F** floor: the transforms in a plain Python loop (own process); no orchestration, checks or catalog.",
        "- **F2** floor on two processes: the same loop with the days split in two halves of consecutive days, one "
        "process each, both at once; together they write the same files as F, checked the same way. B runs its two "
        "run slots on both cores of a 2-core machine, so B's wall is judged against F2 (the floor on both cores) and "
        "B's CPU against F.",
        "- **N** naive Dagster: `bench/naive/definitions.py`, an IO manager overwriting each partition in place, "
        "Dagster's own asset backfill (GraphQL `launchPartitionBackfill`) run by stock `dagster-daemon run`; what a "
        "Dagster user has today: Dagster's stock run coordinator and launcher "
        f"({_instance_text(results, 'N')}; the product's `run_coordinator` and `run_launcher` removed), the queue "
        "polled every second, the same run limits and pools as ours with `max_concurrent_runs: 2`.",
        "- **A** Airflow 3: `bench/airflow/dags/bench_orders.py`, `airflow backfill create --max-active-runs 2`, "
        "LocalExecutor (parallelism 2), metadata on PostgreSQL, api-server on 127.0.0.1, scheduler "
        "`--skip-serve-logs`, cron runs off (`use_job_schedule=False`) so only the backfill runs.",
        "- **O** ours, one interval per run: `backfill-assets request create --reprocess completed --max-active 2 "
        "--partitions-per-run 1` on an empty catalog, carried out by the driver sensor in `backfill-assets-daemon "
        "run` (dagster-daemon whose sensor, backfill and run-queue loops are woken by new work, warm run workers "
        "started with it), one interval (3 assets) per run, every asset-day written, audited by 5 blocking checks "
        "and published by CAS; queue-ahead (one run queued behind each running one, `backfill/slot`); the "
        f"product's `dagster.yaml` as it is ({_instance_text(results, 'O')}) with `max_concurrent_runs: 2`.",
        "- **B** ours, the default request path: the same request as a user types it, without "
        f"`--partitions-per-run` ({_b_flag_text(results)}): chunk runs (job `backfill_chunk`) of K consecutive "
        "days covering all three assets, K resolved when the request is created, the days spread over the "
        f"{s['max_active']} run slots; still one version, 5 checks and one CAS per asset-day; the same daemon "
        f"({_instance_text(results, 'B')}).",
    ]


def _intro(results: dict) -> list[str]:
    s, reps = results["sizes"], results.get("reps", 1)
    caps = ", ".join(f"{n} up to {d}" for n, d in SCALE_MAX_DAYS.items())
    return [
        "# Benchmarks", "", _generated_by(results), "",
        "The same backfill done six ways on one machine, each on a fresh DAGSTER_HOME / AIRFLOW_HOME / output "
        "folder under a temporary directory, all reading one seeded SQLite source (`SourceSystem.seed`) by interval "
        "and writing one Parquet file per asset and day with the project's transform functions. Graph: "
        "`raw_orders -> order_facts -> daily_revenue`; `customer_snapshot` (depends on the past: its days run one "
        "after another) has its own measurements (\"Depends on the past\" below); `revenue_alert` (a side effect) "
        f"is left out. At most {s['max_active']} runs at once everywhere.", "",
        *_contenders(results), "",
        f"Side by side: every contender ran {reps} time(s), interleaved (F, F2, N, A, O, B, then in the reverse order, "
        "and so on), each time on fresh homes; a figure is the median over its repetitions, the range (min–max) "
        "beside it, and every ratio is a ratio of medians. `make bench` measures the side by side, the "
        "depends-on-past measurements and the micro-benchmarks; `make bench-scale` adds the scale curve (one "
        f"repetition per size: F, F2 and B at every size, {caps} days) in the same run: "
        + ("this run has it (\"Scale curve\" below)." if results.get("scale") else "this run does not.")
        + " Every target is judged on figures of this one run.", "",
        "Wall time runs from the submission (the CLI command, the GraphQL launch) to the last day being done "
        "(request closed, backfill COMPLETED, every DAG run finished); services are started and ready before. CPU "
        "and memory: every process of the contender (services, their workers, the submitting CLI; for Airflow also "
        "the PostgreSQL backends of its database), sampled every 0.2 s (`bench/measure.py`).", "",
    ]


def _machine(results: dict) -> list[str]:
    m, s = results["machine"], results["sizes"]
    pkgs = ", ".join(f"{k} {v}" for k, v in m["packages"].items() if v)
    seed = results.get("seed") or {}
    return [
        "## Machine and sizes", "",
        f"- {m['nproc']} cores, {m['ram_gb']} GB RAM, {m['os']}, Python {m['python']}, PostgreSQL {m['postgresql']}",
        f"- {pkgs}",
        f"- {s['days']} days ({s['first_day']}..{s['last_day']}) x {s['orders_per_day']:,} orders/day; "
        f"max {s['max_active']} runs at once; B: K = {_b_k(results)} days per run; "
        f"{_pools(s)}; "
        f"{results.get('reps', 1)} repetition(s) of the side by side",
        f"- command: `{results['command']}`; whole benchmark {results['total_s']} s; source seeded in "
        f"{seed.get('seconds')} s ({seed.get('rows')} rows)", "",
    ]


def _measured(results: dict) -> list[str]:
    lines = ["## Backfill, side by side", "", *_macro(results), *_each_rep(results), "",
             "Cross-check: every repetition of every contender ended with the same days, orders and revenue: "
             f"**{results['checks_agree']}**.", "",
             "## Ratios and targets", "",
             "The current targets first, each in the group of what it asks for (group column: "
             f"{', '.join(CURRENT_GROUPS)}), then the earlier targets still tracked (group: {EARLIER_TARGET}). "
             "Ratios are of the side by side's medians; the scale rows come from the scale curve of this same run "
             f"(below); \"earlier\" is the full run these targets were set against (`{EARLIER_RUN}`, one "
             "repetition, `dagster-daemon`). "
             "B against the floor is judged in CPU against F (the work B adds to the plain loop's, whatever the "
             "cores) and in wall against F2 (the floor on both cores, as B's two run slots are), each ≤ 2 at 20 and "
             "365 days, and B's marginal CPU per day ≤ 2× F's; B/F in wall, against the one-process floor, is an "
             "earlier target.",
             "",
             *targets_table(results), ""]
    if results.get(PAST_KEY):
        lines += ["## Depends on the past", "", *past_section(results[PAST_KEY]), ""]
    if results.get("scale"):
        sc, s = results["scale"], results["sizes"]
        lines += ["## Scale curve", "",
                  f"The same backfill at {', '.join(str(d) for d in sc['sizes'])} days (x {s['orders_per_day']:,} "
                  f"orders/day), one repetition per size, measured after the side by side: {on_the_curve(sc)}. "
                  "Each size has fresh homes and output folders; all read one source seeded for the largest size. "
                  "\"s/day since the previous size\" is the marginal cost of one more day; the slope is fitted over "
                  "all sizes of the contender.", "", *scale_section(sc), ""]
    if tables := published_tables_section(results, RESULTS):
        lines += ["## Published tables: what they cost", "", *tables, ""]
    return lines


def write_report(results: dict, path: Path) -> None:
    lines = [*_intro(results), *_machine(results), *_measured(results)]
    if results.get("micro"):
        lines += ["## Micro-benchmarks", "", *_micro(results["micro"]), ""]
    if celery := _celery(results):
        lines += ["## Steps on Celery workers", "", *celery, ""]
    lines += ["## Reported elsewhere (for reference; not measured here)", "",
              *_table(["system", "size", "wall"], [list(r) for r in REPORTED_ELSEWHERE]),
              "", "Those runs used a trivial task; the figures above run the real transforms on the sizes listed.", ""]
    lines += ["## Where the time goes", "", *_breakdown(results), ""]
    if ANALYSIS.exists():
        lines += [ANALYSIS.read_text().strip(), ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    # Re-render the document from a stored results file: python -m bench.report bench/results/<stamp>.json [OUT]
    # (OUT defaults to docs/BENCHMARKS.md).
    source = Path(sys.argv[1])
    default = Path(__file__).resolve().parent.parent / "docs" / "BENCHMARKS.md"
    target = Path(sys.argv[2]) if len(sys.argv) > 2 else default
    write_report(json.loads(source.read_text()), target)
    print(f"wrote {target}")
