"""docs/BENCHMARKS.md's section on throughput with 1 and 2 Celery workers (``bench/distributed.py``).

``python -m bench.distributed_report <results.json>`` prints the section from a results file of ``python -m
bench.distributed`` or of ``python -m bench.run --celery``.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from .distributed_reading import reading
from .tables import table

KEY = "celery_workers"  # the benchmark's key in a results file
PART_COLUMNS = (  # the parts of the stack shown apart, besides the workers
    ("dagster-daemon (+ run processes)", "daemon + run processes"),
    ("PostgreSQL (whole server)", "PostgreSQL (whole server)"),
    ("moto_server (S3)", "moto_server"),
    ("RabbitMQ (whole broker)", "RabbitMQ (whole broker)"),
    ("request create (CLI)", "CLI"),
)


def _each(values: list) -> str:
    return ", ".join(str(v) for v in values)


def _good(result: dict, count: str) -> list[dict]:
    return [t for t in result["trials"] if str(t["workers"]) == count and t["check"]["ok"]]


def _median(values: list[float], digits: int = 2) -> float | None:
    return round(statistics.median(values), digits) if values else None


def _throughput_rows(result: dict) -> list[list]:
    rows = []
    for count, c in result["summary"]["configurations"].items():
        parts = c["cpu_parts_s_mean"]
        rows.append([
            f"**{count}**", c["trials"], f"**{c['wall_s_median']}** ({_each(c['wall_s'])})",
            f"**{c['cells_per_min_median']}** ({_each(c['cells_per_min'])})",
            f"{c['first_step_submitted_s_median']} ({c['create_command_s_median']})", c["workers_s_mean"],
            c["rest_s_mean"], *(parts.get(name) for name, _ in PART_COLUMNS),
            f"{c['machine_busy_s_mean']} ({round(100 * c['machine_utilisation_mean'])} %)", c["not_ours_s_mean"],
        ])
    return rows


def _trial_rows(result: dict) -> list[list]:
    rows = []
    for t in result["trials"]:
        cpu, load = t["cpu"], t["load_average"]
        per_worker = ", ".join(f"{w} {n}" for w, n in t["check"]["cells_per_worker"].items())
        rows.append([t["index"], t["workers"], t["wall_s"], t["cells_per_min"], cpu["workers_s"], cpu["rest_s"],
                     cpu["not_ours_s"], f"{load['before'][0]} → {load['after'][0]}", t.get("source_pool_slots"),
                     per_worker, "yes" if t["check"]["ok"] else "**no**"])
    return rows


def _phase_rows(result: dict) -> list[list]:
    counts = list(result["summary"]["configurations"])
    first = next((t for t in result["trials"] if t["check"]["ok"]), None)
    if first is None:
        return []
    rows = []
    for phase in first["steps"]["phases"]:
        row = [phase]
        for count in counts:
            stats = [t["steps"]["phases"][phase] for t in _good(result, count)]
            n = _median([s["n"] for s in stats if s.get("n")], 1)
            med = _median([s["median_s"] for s in stats if s.get("n")])
            total = _median([s["total_s"] for s in stats if s.get("n")], 1)
            row.append("-" if med is None else f"{med} / {total} (n={n:g})")
        rows.append(row)
    for asset in first["steps"]["step_body_by_asset"]:
        row = [f"step body: {asset} (one step per run)"]
        for count in counts:
            stats = [t["steps"]["step_body_by_asset"].get(asset, {}) for t in _good(result, count)]
            med = _median([s["median_s"] for s in stats if s.get("n")])
            row.append("-" if med is None else f"{med}")
        rows.append(row)
    return rows


def _worker_text(result: dict) -> str:
    out = []
    for count in result["summary"]["configurations"]:
        shares = []
        for t in _good(result, count):
            busy = ", ".join(f"{name} {round(100 * w['busy_share'])} % ({w['steps']} steps)"
                             for name, w in t["steps"]["workers"].items())
            shares.append(f"{busy}")
        out.append(f"{count} worker(s): " + "; ".join(shares))
    return " — ".join(out)


def _postgres_text(summary: dict) -> str:
    parts = []
    for count, c in summary["configurations"].items():
        pg = c["postgresql_ours_mean"]
        share = c["postgresql_ours_share_of_active"]
        by_database = c.get("postgresql_by_database_mean", {})
        split = ", ".join(f"{label} {db['sessions']:g}" for label, db in by_database.items())
        parts.append(f"{count} worker(s): {pg['sessions']:g} sessions ({split}), {pg['transactions']:g} "
                     f"transactions, {pg['active_s']:g} s executing statements"
                     + ("" if share is None else f", {round(100 * share)} % of the server's statement time"))
    return ("PostgreSQL, our three databases per trial (`pg_stat_database`; the rest of the server's work was "
            "other databases on the shared server): " + "; ".join(parts) + ".")


def _checks_text(result: dict) -> str:
    trials = result["trials"]
    good = [t for t in trials if t["check"]["ok"]]
    text = (f"{len(good)} of {len(trials)} trials passed every check (request COMPLETED, each of the "
            f"{trials[0]['check']['cells'] if trials else '?'} cells published exactly once by a trial worker and "
            "served, `reconcile --verify-files` complete with no duplicate and no gap)")
    if result.get("revenue_agrees") and good:
        r = good[0]["check"]["revenue"]
        text += (f"; every trial read back the same {r['days']} days, {r['orders']:,} orders, "
                 f"{r['revenue_cny']:,.2f} CNY")
    failed = [f"trial {t['index']} ({t['workers']} w): {'; '.join(t['check']['problems'])}"
              for t in trials if not t["check"]["ok"]]
    return text + (". Failed and not counted: " + " | ".join(failed) if failed else ".")


def _attribution_text(result: dict) -> str:
    """Whether every step ran in one of its trial's worker processes, one at a time per worker."""
    steps = [m for t in result["trials"] for m in t["steps"]["timeline"]]
    foreign = [m for m in steps if str(m["worker"]).startswith("pid ")]
    disagree = [m for m in steps if m.get("hostname") and m["hostname"] != m["worker"]]
    overlaps = sum(t["steps"].get("overlaps_on_one_worker", 0) for t in result["trials"])
    return (f"Steps: {len(steps) - len(foreign)} of {len(steps)} started in a worker process of their trial (the "
            f"STEP_START event's pid); Celery's reported hostname disagreed for {len(disagree)}; steps running at "
            f"once on one worker: {overlaps} (0 expected with `--pool=solo`).")


def celery_section(results: dict, origin: str | None = None) -> list[str]:
    """The section, from a results file's content (``results[KEY]`` and its machine); ``origin`` says where the
    figures come from when the section is added to a document measured elsewhere."""
    r, m = results[KEY], results.get("machine", {})
    trials = r["trials"]
    k = trials[0]["partitions_per_run"] if trials else "?"
    runs, steps = (trials[0]["steps"]["runs"], trials[0]["steps"]["steps"]) if trials else ("?", "?")
    s = r["summary"]
    lines = [f"*{origin}*", ""] if origin else []
    lines += [
        f"**Throughput with 1 and 2 Celery workers**: one request, `{','.join(r['assets'])}` over {r['days']} "
        f"business days ({r['first_day']}..{r['last_day']}) x {r['orders_per_day']:,} orders/day, "
        f"`--reprocess completed` on an empty catalog, the CLI's defaults otherwise (`--max-active 2`, "
        f"`--partitions-per-run auto`: K = {k}, {runs} runs, {steps} steps in all). The deploy/celery stack on "
        f"{m.get('nproc', '?')} cores: `orders.on_celery` under dagster-daemon, steps on `dagster-celery` workers "
        "(`--pool=solo`: one step at a time per worker), RabbitMQ, Dagster storage, catalog and source on PostgreSQL, "
        "the warehouse on moto_server; every trial on a fresh stack (new databases, vhost, S3 prefix, daemon and "
        f"workers; source seeded once), worker counts in the order {_each(r['order'])}. Wall: from `request "
        "create` to the request's `closed_at`. CPU: user+system seconds in that window; the PostgreSQL server and "
        "the RabbitMQ broker are whole (anything else using them counts); \"not ours\" is the machine's busy time "
        "minus every part measured (another user's work on the shared cores).",
        "",
    ]
    lines += table(["workers", "trials", "wall s median (each)", "cells/min median (each)",
                    "first step sent after s (of which `request create` s)", "CPU s workers",
                    "CPU s rest of stack", *(label for _, label in PART_COLUMNS),
                    "machine busy CPU s (share of the cores)", "not ours CPU s"],
                   _throughput_rows(r))
    per_rep = s["ratio_per_repetition"]
    lines += ["", f"**2-worker / 1-worker throughput: {s['ratio_2_over_1']}** (medians of this run; per "
              f"repetition pair: {_each(per_rep) if per_rep else 'none'}). CPU columns are means over the trials.",
              "", "Each trial, in the order run (source pool slots: the `source_system` pool's slots in the trial's "
              "Dagster database, 1 from deploy/celery's `pools.default_limit`; 2 would have let both runs' extracts "
              "run at once):", ""]
    lines += table(["trial", "workers", "wall s", "cells/min", "CPU s workers", "CPU s rest", "not ours CPU s",
                    "load 1 min before → after", "source pool slots", "cells per worker", "checks"], _trial_rows(r))
    lines += ["", _postgres_text(s), "", f"Correctness: {_checks_text(r)} {_attribution_text(r)}", "",
              "Where the steps' time went (from the Dagster event log; per trial median / total s, the median over "
              "the trials of each configuration):", ""]
    lines += table(["phase", *[f"{c} worker(s)" for c in s["configurations"]]], _phase_rows(r))
    cold = "; ".join(f"{count} worker(s): " + ", ".join(_each(list(t.values())) for t in c["cold_pickup_s"])
                     for count, c in s["configurations"].items())
    lines += ["", f"Worker busy time (picked up → step end) as a share of the wall: {_worker_text(r)}. A worker's "
              f"first step waits for it to import the code location (submitted → picked up, s, per trial): {cold}."]
    if reading_lines := reading(r, m.get("nproc", "?")):
        lines += ["", *reading_lines]
    return lines


if __name__ == "__main__":
    path = Path(sys.argv[1])
    print("\n".join(celery_section(json.loads(path.read_text()), f"from {path.name}")))
