"""``python -m bench.run`` (``make bench``): every contender on the same data, the micro-benchmarks, the report.

Example: python -m bench.run --days 10 --orders-per-day 2000 --only F,O
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

from .checks import agree
from .machine import describe_machine
from .outcome import Outcome
from .report import ratios, write_report
from .workspace import REPO, Sizes, Workspace

RESULTS = REPO / "bench" / "results"
DOC = REPO / "docs" / "BENCHMARKS.md"
CONTENDERS = ("F", "N", "A", "O", "B")
DEFAULT = ("F", "N", "O", "B")  # A (Airflow) only with --with-airflow: it installs its own virtualenv


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=Sizes.days, help="business days backfilled (from 2022-09-01)")
    p.add_argument("--orders-per-day", type=int, default=Sizes.orders_per_day)
    p.add_argument("--max-active", type=int, default=Sizes.max_active, help="runs in flight at once, every contender")
    p.add_argument("--partitions-per-run", type=int, default=Sizes.partitions_per_run, help="K of contender B")
    p.add_argument("--with-airflow", action="store_true", help="also run A (creates bench/airflow/.venv if missing)")
    p.add_argument("--only", default=None, help=f"comma-separated subset of {','.join(CONTENDERS)}")
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


def run_contender(name: str, ws: Workspace, sizes: Sizes, args: argparse.Namespace) -> Outcome:
    # Imported late: each contender pulls in only what it needs (Dagster, or nothing but subprocesses).
    if name == "F":
        from .contenders import floor

        return floor.run(ws, sizes)
    if name == "N":
        from .contenders import naive

        return naive.run(ws, sizes, args.timeout)
    if name == "A":
        from .contenders import airflow3

        return airflow3.run(ws, sizes, args.timeout, args.pg_url)
    from .contenders import ours

    k = 1 if name == "O" else sizes.partitions_per_run
    return ours.run(ws, sizes, name, k, args.timeout)


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore", message=".*is currently in (preview|beta).*")
    args = parse_args(argv)
    sizes = Sizes(args.days, args.orders_per_day, args.max_active, args.partitions_per_run)
    names = chosen(args)
    began = time.monotonic()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    results: dict = {"timestamp": stamp, "machine": describe_machine(), "sizes": sizes.as_dict(),
                     "command": " ".join(["python -m bench.run", *(argv if argv is not None else sys.argv[1:])]),
                     "contenders": {}, "micro": {}}
    ws = Workspace(keep=args.keep)
    print(f"bench: {names or 'micro only'} on {sizes.days} days x {sizes.orders_per_day} orders/day in {ws.root}")
    try:
        if names:
            results["seed"] = ws.seed(sizes)
            print(f"  seeded the source: {results['seed']}")
        for name in names:
            outcome = run_contender(name, ws, sizes, args)
            results["contenders"][name] = outcome.as_dict()
            u = outcome.usage
            print(f"  {name} {outcome.title}: {u.wall_s:.1f} s wall, {u.cpu_s:.1f} s CPU, peak RSS "
                  f"{u.peak_rss_mb:.0f} MB, {outcome.runs} run(s), check {outcome.check}")
        if not args.no_micro:
            from .micro import run_all

            results["micro"] = run_all(args.pg_url, ws, log=print)
    finally:
        ws.close()
    checks = {n: c["check"] for n, c in results["contenders"].items()}
    results["checks_agree"] = agree(checks) if checks else None
    results["ratios"] = ratios(results["contenders"])
    results["total_s"] = round(time.monotonic() - began, 1)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=2, default=str))
    print(f"bench: {results['total_s']} s in all; results in {path}; checks agree: "
          f"{results['checks_agree']}")
    if not args.no_doc:
        write_report(results, DOC)
        print(f"bench: wrote {DOC.relative_to(REPO)}")
    return 0 if results["checks_agree"] in (True, None) else 1


if __name__ == "__main__":
    sys.exit(main())
