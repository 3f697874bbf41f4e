"""``python -m bench.run`` (``make bench``): every contender on the same data, the micro-benchmarks, the report.

Every contender of the side by side runs ``--reps`` times (default 3), interleaved (F,F2,N,A,O,B then B,O,A,N,F2,F,
...), each time on fresh homes; its figures are the medians, with the spread beside them (``bench/repetitions.py``).
Then the depends-on-past measurements (``bench/past.py``; ``--no-past`` skips them), and the published tables' cost:
B at 365 days with the Iceberg tables on and off, twice each (``bench/published_tables.py``, ~15 min; ``--tables-days
0`` skips it). With ``--scale 10,40,120,365``
(``make bench-scale``) the same run then measures the scale curve, one repetition per size: F, F2 and B at every
size, O and A (with ``--with-airflow``) up to 120 days, N up to 40, each size on its own folders and the same source.
With ``--celery`` (``make bench BENCH_ARGS=--celery``) it also measures the throughput of a 40-day request
with 1 and with 2 Celery workers (``bench/distributed.py``, ~25 min on 2 cores: not part of the default run).

Example: python -m bench.run --days 10 --orders-per-day 2000 --only F,O
Example: python -m bench.run --days 3 --orders-per-day 500 --only F,F2,B --reps 1 --scale 2,4 --no-past --no-micro \
    --no-doc --tables-days 3 --tables-reps 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from .checks import agree
from .distributed_report import KEY as CELERY_KEY
from .locations import AUTO, DEMO, LOCATIONS, location_for
from .machine import describe_machine
from .outcome import Outcome
from .past_plan import CHAIN_DAYS, UI_DAYS, PastPlan
from .past_plan import KEY as PAST_KEY
from .published_tables_report import DAYS as TABLES_DAYS
from .published_tables_report import KEY as TABLES_KEY
from .published_tables_report import REPS as TABLES_REPS
from .repetitions import interleaved, summarize
from .report import ratios, write_report
from .scale import SCALE_CONTENDERS, SCALE_MAX_DAYS, on_curve_at, scale_growth
from .workspace import REPO, Sizes, Workspace

RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "BENCHMARKS.md"
# F2: the floor's loop on two processes at once (bench/contenders/floor.py).
CONTENDERS = ("F", "F2", "N", "A", "O", "B")
DEFAULT = ("F", "F2", "N", "O", "B")  # A (Airflow) only with --with-airflow: it installs its own virtualenv
INVOKED_AS = "BENCH_INVOKED_AS"  # set by the Makefile's targets: the doc names the make command too


def day_counts(text: str) -> list[int]:
    """``10,40,120`` -> [10, 40, 120] (sorted, distinct, each at least 1)."""
    try:
        days = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated numbers of days, e.g. 10,40,120") from None
    if not days or days[0] < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: at least one size, each of 1 day or more")
    return days


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=Sizes.days,
                   help="business days backfilled (from the location's first day: 2022-09-01, or 2016-01-01)")
    p.add_argument("--orders-per-day", type=int, default=Sizes.orders_per_day,
                   help="orders seeded per day, at every size of the run (lower: ten years seeded in minutes)")
    p.add_argument("--location", choices=[AUTO, *LOCATIONS], default=AUTO,
                   help="the orders code location whose days every contender runs (bench/locations); auto: the "
                        "demo's when the run's largest size fits before today, else ten-years")
    p.add_argument("--max-active", type=int, default=Sizes.max_active, help="runs in flight at once, every contender")
    p.add_argument("--partitions-per-run", type=int, default=Sizes.partitions_per_run,
                   help="K of contender B only when `request create` knows no `auto` (B takes the default path)")
    p.add_argument("--pool-limit", type=int, default=Sizes.pool_limit,
                   help="steps at once per pool for ours (the source's among them); 0: the shipped dagster.yaml's (1)")
    p.add_argument("--with-airflow", action="store_true", help="also run A (creates bench/airflow/.venv if missing)")
    p.add_argument("--only", default=None, help=f"comma-separated subset of {','.join(CONTENDERS)}")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each contender in the side by side")
    p.add_argument("--scale", type=day_counts, default=[], metavar="DAYS,DAYS,...",
                   help="also the scale curve (one repetition per size): F, F2 and B at each size, "
                        + ", ".join(f"{n} up to {d} days" for n, d in SCALE_MAX_DAYS.items()))
    p.add_argument("--no-past", action="store_true", help="skip the depends-on-past measurements")
    p.add_argument("--ui-days", type=int, default=UI_DAYS, help="days of the depends-on-past UI backfill")
    p.add_argument("--chain-days", type=int, default=CHAIN_DAYS, help="days of the depends-on-past chain")
    p.add_argument("--celery", action="store_true",
                   help="also a 40-day request on 1 and on 2 Celery workers, 3 trials each (needs PostgreSQL and "
                        "RabbitMQ; ~25 min; alone: python -m bench.distributed)")
    p.add_argument("--tables-days", type=int, default=TABLES_DAYS,
                   help="days of the published tables' cost (B with the Iceberg tables on and off; 0 skips it)")
    p.add_argument("--tables-reps", type=int, default=TABLES_REPS, help="runs of B with the tables on, and off")
    p.add_argument("--no-micro", action="store_true", help="skip the micro-benchmarks")
    p.add_argument("--micro-only", action="store_true", help="only the micro-benchmarks")
    p.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                   help="a PostgreSQL maintenance database (temporary databases are created next to it)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds one contender may take")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, homes, files)")
    p.add_argument("--no-doc", action="store_true", help="do not rewrite docs/BENCHMARKS.md")
    p.add_argument("--results-dir", type=Path, default=RESULTS, help="where the results JSON goes")
    return p.parse_args(argv)


def chosen(args: argparse.Namespace) -> list[str]:
    if args.micro_only:
        return []
    names = [n.strip().upper() for n in args.only.split(",")] if args.only else list(DEFAULT)
    if args.with_airflow and "A" not in names and not args.only:
        names.insert(2, "A")
    unknown = sorted(set(names) - set(CONTENDERS))
    if unknown:
        raise SystemExit(f"unknown contender(s) {unknown}; known: {', '.join(CONTENDERS)}")
    return [n for n in CONTENDERS if n in names]


def scale_contenders(args: argparse.Namespace, days: int) -> list[str]:
    """The contenders of the scale curve at ``days`` (``--only`` narrows them, ``--with-airflow`` adds A)."""
    if args.micro_only:
        return []
    wanted = {n.strip().upper() for n in args.only.split(",")} if args.only else set(DEFAULT)
    if args.with_airflow and not args.only:
        wanted.add("A")
    return [n for n in SCALE_CONTENDERS if n in wanted and on_curve_at(n, days)]


def past_parts(args: argparse.Namespace, names: list[str]) -> tuple[str, ...]:
    """The depends-on-past measurements this run makes: ours' with O or B, N's with N."""
    if args.no_past or args.micro_only:
        return ()
    return tuple(part for part, who in (("ours", {"O", "B"}), ("naive", {"N"})) if who & set(names))


def tables_days(args: argparse.Namespace, names: list[str]) -> int:
    """Days of the published tables' cost measurement (0: not measured; it runs B, so only with B)."""
    return args.tables_days if "B" in names and not args.micro_only and args.tables_days > 0 else 0


def chosen_location(args: argparse.Namespace, names: list[str], now: datetime) -> str:
    """The location of every contender of this run: ``--location``, or the one its largest size fits in. Naive
    Dagster, Airflow and the depends-on-past measurements run the demo's days only: refused on another."""
    from .plain import CALENDAR

    largest = max([args.days, *args.scale])
    newest = CALENDAR.newest_complete_key(now) or ""
    try:
        location = LOCATIONS[args.location] if args.location != AUTO else location_for(largest, newest)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if location.last_of(largest) > newest:
        raise SystemExit(f"{largest} days from {location.first_day} end after {newest}, the newest complete day")
    refused = sorted({*names, *(n for d in args.scale for n in scale_contenders(args, d))} & {"N", "A"})
    refused += ["the depends-on-past measurements (--no-past)"] if past_parts(args, names) else []
    if location != DEMO and refused:
        raise SystemExit(f"the {location.name} location runs F, F2, O and B only, not: {', '.join(refused)}")
    return location.name


def run_contender(name: str, ws: Workspace, sizes: Sizes, args: argparse.Namespace) -> Outcome:
    # Imported late: each contender pulls in only what it needs (Dagster, or nothing but subprocesses).
    if name in ("F", "F2"):
        from .contenders import floor

        return floor.run(ws, sizes, name)
    if name == "N":
        from .contenders import naive

        return naive.run(ws, sizes, args.timeout)
    if name == "A":
        from .contenders import airflow3

        return airflow3.run(ws, sizes, args.timeout, args.pg_url)
    from .contenders import ours

    return ours.run(ws, sizes, name, args.timeout)


def run_scale(ws: Workspace, sizes: Sizes, args: argparse.Namespace) -> dict:
    """The scale curve: at each size of ``--scale`` its contenders, on folders of their own, and their cross-check."""
    points = []
    for days in args.scale:
        at = replace(sizes, days=days)
        part = ws.part(f"scale-{days}")
        outcomes = {}
        try:
            for name in scale_contenders(args, days):
                outcome = run_contender(name, part, at, args)
                outcomes[name] = outcome.as_dict()
                u = outcome.usage
                print(f"  scale {days} d, {name}: {u.wall_s:.1f} s wall, {u.cpu_s:.1f} s CPU, {outcome.runs} run(s), "
                      f"check {outcome.check}")
        finally:
            part.close()
        checks = {n: c["check"] for n, c in outcomes.items()}
        points.append({"days": days, "sizes": at.as_dict(), "contenders": outcomes,
                       "checks_agree": agree(checks) if checks else None})
    return {"sizes": list(args.scale), "points": points, "growth": scale_growth(points)}


def run_side_by_side(ws: Workspace, sizes: Sizes, names: list[str], args: argparse.Namespace) -> dict:
    """Every contender ``--reps`` times, interleaved, each repetition on folders of its own; per contender the
    outcomes in the order run."""
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for rep, name in interleaved(names, max(1, args.reps)):
        part = ws.part(f"rep-{rep}")
        try:
            outcome = run_contender(name, part, sizes, args)
        finally:
            part.close()
        runs[name].append({**outcome.as_dict(), "rep": rep})
        u = outcome.usage
        print(f"  rep {rep}, {name} {outcome.title}: {u.wall_s:.1f} s wall, {u.cpu_s:.1f} s CPU, peak RSS "
              f"{u.peak_rss_mb:.0f} MB, {outcome.runs} run(s), check {outcome.check}")
    return runs


def command_line(argv: list[str] | None) -> str:
    """The exact command, as the Makefile invoked it when it did (``make bench-scale: python -m bench.run ...``)."""
    command = " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])])
    invoked_as = os.environ.get(INVOKED_AS)
    return f"{invoked_as}: {command}" if invoked_as else command


def measure(ws: Workspace, sizes: Sizes, names: list[str], args: argparse.Namespace, results: dict) -> None:
    """Everything this run measures, into ``results``."""
    scale, past = (args.scale if not args.micro_only else []), past_parts(args, names)
    plan = PastPlan(args.ui_days, args.chain_days)
    table_days = tables_days(args, names)
    if names or scale or past:
        # One source for every size (seeding is deterministic per day): the smaller sizes read a prefix of it.
        most = max([sizes.days, *scale, plan.ui_days + plan.chain_days if past else 0, table_days])
        results["seed"] = ws.seed(replace(sizes, days=most))
        print(f"  seeded the source: {results['seed']}")
    runs = run_side_by_side(ws, sizes, names, args)
    results["repetitions"] = runs
    results["contenders"] = {name: summarize(outcomes) for name, outcomes in runs.items()}
    if past:
        from . import past as past_measurement

        part = ws.part("past")
        try:
            results[PAST_KEY] = past_measurement.run(part, plan, sizes.max_active, args.timeout, past)
        finally:
            part.close()
    if scale:
        results["scale"] = run_scale(ws, sizes, args)
    if table_days:
        from . import published_tables

        results[TABLES_KEY] = published_tables.measure(ws, replace(sizes, days=table_days), args.tables_reps,
                                                       args.timeout, seed=False)
        t = results[TABLES_KEY]
        print(f"  published tables at {table_days} d: on/off wall {t['wall_ratio']}, CPU {t['cpu_ratio']}; "
              f"publish -> visible {t['latency']}; days missing {t['days_missing']}")
    if not args.no_micro:
        from .micro import run_all

        results["micro"] = run_all(args.pg_url, ws, log=print)
    if args.celery:
        from . import distributed

        # The benchmark's orders per day; its own 40 days (the Celery figure's request), whatever --days says.
        results[CELERY_KEY] = distributed.run(ws, args.pg_url, orders_per_day=sizes.orders_per_day,
                                              timeout=args.timeout, log=print)


def all_checks_agree(results: dict) -> bool | None:
    """Every repetition of every contender ended with the same days, orders and revenue (None: nothing ran)."""
    checks = {f"{name}#{i}": o["check"] for name, outcomes in results.get("repetitions", {}).items()
              for i, o in enumerate(outcomes)}
    return agree(checks) if checks else None


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*is currently in (preview|beta).*")
    args = parse_args(argv)
    names = chosen(args)
    now = datetime.now(timezone.utc)
    sizes = Sizes(args.days, args.orders_per_day, args.max_active, args.partitions_per_run,
                  chosen_location(args, names, now), args.pool_limit)
    began = time.monotonic()
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    results: dict = {"timestamp": stamp, "machine": describe_machine(), "sizes": sizes.as_dict(),
                     "command": command_line(argv), "reps": max(1, args.reps), "contenders": {}, "micro": {}}
    ws = Workspace(keep=args.keep)
    print(f"bench: {names or 'micro only'} x {results['reps']} on {sizes.days} days x {sizes.orders_per_day} "
          f"orders/day in {ws.root}" + (f"; scale curve at {args.scale} days" if args.scale else ""))
    try:
        measure(ws, sizes, names, args, results)
    finally:
        ws.close()
    results["checks_agree"] = all_checks_agree(results)
    results["ratios"] = ratios(results["contenders"])
    results["total_s"] = round(time.monotonic() - began, 1)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=2, default=str))
    scale_agree = [p["checks_agree"] for p in (results.get("scale") or {}).get("points", [])]
    past_agree = list(((results.get(PAST_KEY) or {}).get("checks") or {}).values())
    print(f"bench: {results['total_s']} s in all; results in {path}; checks agree: {results['checks_agree']}"
          + (f", at each scale size: {scale_agree}" if scale_agree else "")
          + (f", depends-on-past: {past_agree}" if past_agree else ""))
    if not args.no_doc:
        write_report(results, DOC)
        print(f"bench: wrote {DOC.relative_to(REPO)} from {path}")
    celery_ok = [results[CELERY_KEY]["all_ok"] and results[CELERY_KEY]["revenue_agrees"]] if args.celery else []
    tables_ok = [results[TABLES_KEY]["checks_agree"] and not results[TABLES_KEY]["days_missing"]] \
        if results.get(TABLES_KEY) else []
    verdicts = (results["checks_agree"], *scale_agree, *past_agree, *celery_ok, *tables_ok)
    return 0 if all(a in (True, None) for a in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
