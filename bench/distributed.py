"""Throughput of one backfill request with 1 and with 2 Celery workers.

The request is the benchmark's graph (``raw_orders,order_facts,daily_revenue``; ``customer_snapshot`` is left
out: it depends on the past, which makes ``auto`` run one day per run, serially, and hides what a second worker
can do) over 40 business days, ``--reprocess completed`` on an empty catalog, with the CLI's defaults for
everything else: ``--max-active 2`` and ``--partitions-per-run auto`` (here 2 chunk runs of 20 days, each run
four steps: raw_orders, order_facts, daily_revenue, verdict). It runs on the deployment of deploy/celery:
``orders.on_celery`` under ``dagster-daemon``, steps on ``dagster-celery`` workers (solo pool, one step at a time
each), Dagster's storage, the catalog and the source on PostgreSQL, the warehouse on moto_server.

Each trial is a fresh stack (``bench/distributed_stack.py``) with 1 or 2 workers, the two alternating (1, 2, 2,
1, ...) so that a drift of the machine's load falls on both. Measured from the moment ``request create`` is
typed to the request's ``closed_at``: wall time, cells published per minute, CPU seconds per part of the stack
and the machine's load (``bench/cpu_groups.py``), and where the steps' time went (``bench/distributed_steps.py``).
A trial counts only if its result is right (``bench/distributed_checks.py``). The ratio is the median 2-worker
throughput over the median 1-worker throughput of the same run. About 25 minutes on 2 cores: seeding the source
(~4 min), then 2 to 5 minutes a trial, stack included.

Example: python -m bench.distributed
Example: python -m bench.distributed --days 4 --orders-per-day 200 --repetitions 1 --workers 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable

from sqlalchemy.engine import make_url

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.gates import DEFAULT_SOURCE_POOL as SOURCE_POOL
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger

from .cpu_groups import CpuGroups
from .distributed_checks import check_trial
from .distributed_report import KEY, celery_section
from .distributed_stack import Shared, Stack, broker_pid, postgres_server_pid, seeded_source, trial_stack
from .distributed_steps import step_breakdown
from .distributed_summary import summarise
from .machine import describe_machine
from .pg_stats import activity, database_counters
from .plain import ASSETS
from .s3_server import aws_environment, s3_server
from .services import wait_until
from .workspace import REPO, Sizes, Workspace

DAYS = 40
REPETITIONS = 3  # the median of 3 survives one trial disturbed by other work on the shared cores
WORKER_COUNTS = (1, 2)
DONE = (*M.CLOSED_STATUSES, M.BLOCKED)
POLL_S = 0.5  # the harness's own reads of the request; the wall time is the ledger's closed_at, not this poll
DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
PACKAGES = ("dagster-celery", "celery", "s3fs", "moto")
WORKER_PART = "worker "  # CPU parts named "worker w1", "worker w2": the rest of the stack is everything else


def schedule(repetitions: int, counts: tuple[int, ...] = WORKER_COUNTS) -> list[int]:
    """Worker counts in trial order, alternating which goes first: 1, 2, 2, 1, 1, 2, ..."""
    order: list[int] = []
    for rep in range(repetitions):
        order += list(counts if rep % 2 == 0 else counts[::-1])
    return order


def _create(stack: Stack, sizes: Sizes, cpu: CpuGroups) -> tuple[str, float]:
    """``backfill-assets request create`` as a user types it (the CLI's defaults for pacing and batching)."""
    argv = [dagster_bin("backfill-assets"), "request", "create", "--assets", ",".join(ASSETS),
            "--from", sizes.first, "--to", sizes.last, "--reprocess", "completed",
            "--reason", "celery benchmark", "--requested-by", "bench", "--json"]
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=stack.env, cwd=stack.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    cpu.add_session("request create (CLI)", proc.pid)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"request create failed ({proc.returncode}): {err.decode()[-2000:]}")
    return json.loads(out)["request_id"], time.monotonic() - started


def _sessions(stack: Stack, s3_pid: int | None) -> dict[str, list[int]]:
    parts = {f"{WORKER_PART}{w.name}": [w.process.pid] for w in stack.workers}
    parts["dagster-daemon (+ run processes)"] = [stack.daemon.pid]
    if s3_pid:
        parts["moto_server (S3)"] = [s3_pid]
    return parts


def _split(cpu: dict) -> dict:
    """Workers against the rest of the stack (the harness counted with the rest)."""
    workers = sum(s for name, s in cpu["parts_s"].items() if name.startswith(WORKER_PART))
    rest = sum(s for name, s in cpu["parts_s"].items() if not name.startswith(WORKER_PART)) + cpu["harness_s"]
    return {"workers_s": round(workers, 2), "rest_s": round(rest, 2), "ours_s": round(workers + rest, 2)}


def run_trial(shared: Shared, root: Path, workers: int, sizes: Sizes, servers: dict, s3_pid: int | None,
              timeout: float) -> dict:
    """One trial on a fresh stack: the request, its wall time and CPU, then its checks and step breakdown."""
    with trial_stack(shared, root, workers) as stack:
        ledger = Ledger(Catalog(stack.catalog_url))
        urls = {"dagster": stack.env["DAGSTER_PG_URL"], "catalog": stack.catalog_url, "source": shared.source_url}
        databases = {label: make_url(url).database for label, url in urls.items()}
        load_before, pg_before = os.getloadavg(), database_counters(shared.pg_url)
        with CpuGroups(_sessions(stack, s3_pid), servers) as cpu:
            began = time.time()
            request_id, create_s = _create(stack, sizes, cpu)
            alive = [stack.daemon, *(w.process for w in stack.workers)]
            wait_until(lambda: ledger.get(request_id).status in DONE, f"request {request_id}", timeout, alive,
                       POLL_S)
        load_after, pg_after = os.getloadavg(), database_counters(shared.pg_url)
        record = ledger.get(request_id)
        closed = record.row.get("closed_at")
        wall = (datetime.fromisoformat(closed).timestamp() if closed else time.time()) - began
        usage = cpu.result()
        check = check_trial(stack, request_id, ASSETS, sizes.keys)
        return {
            "workers": workers,
            "request_id": request_id,
            "partitions_per_run": record.spec.partitions_per_run,
            "partitions_per_run_mode": record.spec.partitions_per_run_mode,
            "wall_s": round(wall, 2),
            "cells_per_min": round(check["cells"] / wall * 60, 1),
            "create_command_s": round(create_s, 2),
            "load_average": {"before": [round(x, 2) for x in load_before],
                             "after": [round(x, 2) for x in load_after]},
            "cpu": {**usage, **_split(usage)},
            "postgresql": activity(pg_before, pg_after, databases),
            "check": check,
            "steps": step_breakdown(stack.instance, request_id, began, wall, stack.worker_pids()),
            # deploy/celery's pools.default_limit is 1; two runs claiming the pool's first slot at once on a fresh
            # Dagster database can each create one (both extracts then run together): recorded, not hidden.
            "source_pool_slots": stack.instance.event_log_storage.get_concurrency_info(SOURCE_POOL).slot_count,
        }


def run(ws: Workspace, pg_url: str = DEFAULT_PG_URL, days: int = DAYS, orders_per_day: int = Sizes.orders_per_day,
        repetitions: int = REPETITIONS, counts: tuple[int, ...] = WORKER_COUNTS, timeout: float = 1800.0,
        log: Callable[[str], None] = print) -> dict:
    sizes = Sizes(days=days, orders_per_day=orders_per_day)
    began = time.monotonic()
    order = schedule(repetitions, counts)
    with s3_server(ws.dir("celery/logs")) as s3, aws_environment(s3):
        seeding = time.monotonic()
        with seeded_source(pg_url, sizes.first, sizes.last, orders_per_day) as (source_url, rows):
            seed = {"rows": rows, "seconds": round(time.monotonic() - seeding, 1)}
            log(f"  celery: source seeded on PostgreSQL, {rows} rows in {seed['seconds']} s")
            shared = Shared(pg_url, source_url, s3)
            servers = {"PostgreSQL (whole server)": postgres_server_pid(pg_url),
                       "RabbitMQ (whole broker)": broker_pid()}
            trials = []
            for n, workers in enumerate(order):
                trial = run_trial(shared, ws.dir(f"celery/trial{n}-{workers}w"), workers, sizes, servers,
                                  s3.pid, timeout)
                trials.append({"index": n, **trial})
                verdict = "ok" if trial["check"]["ok"] else trial["check"]["problems"]
                log(f"  celery trial {n}: {workers} worker(s), {trial['wall_s']} s, {trial['cells_per_min']} "
                    f"cells/min, CPU workers {trial['cpu']['workers_s']} s / rest {trial['cpu']['rest_s']} s, "
                    f"load {trial['load_average']['after'][0]}, checks {verdict}")
    revenue = {json.dumps(t["check"]["revenue"], sort_keys=True) for t in trials if t["check"]["ok"]}
    return {
        "days": days, "first_day": sizes.first, "last_day": sizes.last, "orders_per_day": orders_per_day,
        "assets": list(ASSETS), "repetitions": repetitions, "order": order, "seed": seed,
        "unmeasured": sorted(name for name, pid in servers.items() if not pid),
        "packages": {name: _version(name) for name in PACKAGES},
        "trials": trials, "summary": summarise(trials),
        "all_ok": all(t["check"]["ok"] for t in trials), "revenue_agrees": len(revenue) == 1,
        "total_s": round(time.monotonic() - began, 1),
    }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.distributed", description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=DAYS, help="business days of the request (from 2022-09-01)")
    p.add_argument("--orders-per-day", type=int, default=Sizes.orders_per_day)
    p.add_argument("--repetitions", type=int, default=REPETITIONS, help="trials per worker count")
    p.add_argument("--workers", default=",".join(map(str, WORKER_COUNTS)), help="worker counts, e.g. 1,2")
    p.add_argument("--pg-url", default=DEFAULT_PG_URL, help="a PostgreSQL maintenance database")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds one request may take")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, homes)")
    p.add_argument("--results-dir", type=Path, default=REPO / "bench" / "results")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: ``bench/results/<stamp>-celery_workers.json`` (the shape ``python -m
    bench.distributed_report`` renders) and its section of docs/BENCHMARKS.md on stdout."""
    args = parse_args(argv)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    counts = tuple(int(c) for c in args.workers.split(","))
    ws = Workspace(keep=args.keep)
    print(f"bench.distributed: {args.days} days x {args.orders_per_day} orders/day, workers {counts}, "
          f"{args.repetitions} repetition(s), in {ws.root}", file=sys.stderr)
    try:
        result = run(ws, args.pg_url, args.days, args.orders_per_day, args.repetitions, counts, args.timeout,
                     log=lambda line: print(line, file=sys.stderr))
    finally:
        ws.close()
    results = {"timestamp": stamp, "command": " ".join(["python -m bench.distributed", *(argv or sys.argv[1:])]),
               "machine": describe_machine(), KEY: result}
    args.results_dir.mkdir(parents=True, exist_ok=True)
    path = args.results_dir / f"{stamp}-{KEY}.json"
    path.write_text(json.dumps(results, indent=2, default=str))
    print("\n".join(celery_section(results)))
    print(f"results in {path}", file=sys.stderr)
    return 0 if result["all_ok"] and result["revenue_agrees"] else 1


if __name__ == "__main__":
    sys.exit(main())
