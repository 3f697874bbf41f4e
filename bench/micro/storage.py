"""The warehouse on S3 against the warehouse on a local folder, per asset-day (the overhead of S3 storage).

Timed for one day of ``raw_orders`` at each size of ``ORDERS_PER_DAY`` (the frame the source extracts for it), on
each backend:

- **write**: one version's ``data.parquet`` and ``_manifest.json`` (``Warehouse.write``: Parquet encoding, sha256,
  column stats, write-once);
- **read**: that version read back and verified (``Warehouse.read_verified``: bytes, sha256, row count);
- **gate**: the whole write-audit-publish of the day as the step runs it (``Gate.begin``, ``write_and_audit`` with
  the asset's own audits and the file-integrity re-read from storage, ``conclude``: the publish CAS in a SQLite
  catalog), then the published version read as a downstream step reads it (``Catalog.current``, verified read).

The baseline is the same work on a local folder, measured in the same run: repetitions alternate between the two
backends (and which goes first), so load from elsewhere on the machine falls on both alike. The figures are the
ratio S3 / local of each percentile and what S3 adds to the median (S3 p50 - local p50). The S3 server is
``moto_server`` on 127.0.0.1, its own process on the same cores (``bench/s3_server.py``): the figures are the cost
of the S3 path (s3fs, HTTP, the server's work) without a network's latency, which a bucket on another host adds
to every request.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from typing import Callable

import pandas as pd
from s3fs import S3FileSystem
from upath import UPath

from backfill_assets.engine.model.graph import INTERVAL_ARG, RUN_ARG
from backfill_assets.engine.model.identity import RunIdentity, make_version_id, params_digest
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.gate import Gate
from backfill_assets.engine.wap.run_context import run_context_of
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.examples.orders.resources import OrdersSource
from backfill_assets.examples.orders.source import SourceSystem

from ..machine import describe_machine
from ..orders import GRAPH
from ..plain import CALENDAR
from ..s3_server import S3Server, aws_environment, s3_server
from ..storage_report import KEY, storage_section
from ..workspace import REPO, Workspace
from .stats import latency, ratio

ORDERS_PER_DAY = (500, 20_000)
REPETITIONS = 40  # timed asset-days per operation, size and backend
WARMUP = 3  # first asset-days of each backend, untimed (connections, clients, imports)
DAY = "2022-09-01"
BACKENDS = ("local", "s3")
OPERATIONS = ("write", "read", "gate")
S3_PACKAGES = ("s3fs", "universal-pathlib", "moto")


@dataclass(frozen=True)
class Backend:
    name: str
    warehouse: Warehouse
    catalog: Catalog


def _identity(run_id: str) -> RunIdentity:
    return RunIdentity(asset=RAW_ORDERS, interval=CALENDAR.interval(DAY), logical_run_id=run_id,
                       dagster_run_id=run_id, request_id=None, code_version="bench",
                       params_digest=params_digest({}), lane="backfill", requested_at=None,
                       started_at=iso(utc_now()))


def _timed(step: Callable[[], object]) -> tuple[float, object]:
    began = time.perf_counter()
    out = step()
    return time.perf_counter() - began, out


def _write_and_read(backend: Backend, frame: pd.DataFrame, n: int) -> tuple[float, float]:
    """One version written (timed), then read back verified (timed); the read must return every row."""
    run_id = f"write-{n}"
    warehouse = backend.warehouse
    directory = warehouse.version_dir(RAW_ORDERS, DAY, run_id, 1)
    extra = {"version_id": make_version_id(RAW_ORDERS, DAY, run_id, 1), "input_versions": {}}
    write_s, written = _timed(lambda: warehouse.write(directory, frame, _identity(run_id).labels(1), extra))
    read_s, read = _timed(lambda: warehouse.read_verified(written.path, written.sha256, written.rows))
    assert len(read) == len(frame), (backend.name, len(read), len(frame))
    return write_s, read_s


def _gate(backend: Backend, frame: pd.DataFrame, available: dict, n: int) -> float:
    """The whole gate of one asset-day, then the downstream read of what it published (timed together)."""

    def step() -> pd.DataFrame:
        gate = Gate(backend.catalog, backend.warehouse, GRAPH[RAW_ORDERS], _identity(f"gate-{n}"))
        gate.begin()
        # The attempt, as the gated step gives it: the example's source checks read the source once per attempt.
        outcome = gate.conclude(gate.write_and_audit(frame, {**available, RUN_ARG: run_context_of(gate)}))
        if not outcome.published:
            raise AssertionError(f"{backend.name}: {gate.version_id} was not published: {outcome.error}")
        current = backend.catalog.current(RAW_ORDERS, DAY)
        return backend.warehouse.read_verified(current.path, current.sha256, current.rows)

    seconds, read = _timed(step)
    assert len(read) == len(frame), (backend.name, len(read), len(frame))
    return seconds


def _orders_frame(ws: Workspace, orders: int) -> tuple[pd.DataFrame, dict]:
    """The day's ``raw_orders`` as the source extracts it, and what the asset's audits are given."""
    url = f"sqlite:///{ws.dir('micro/storage') / f'source_{orders}.db'}"
    source = SourceSystem(url)
    source.seed(CALENDAR, DAY, DAY, orders)
    interval = CALENDAR.interval(DAY)
    return source.extract(interval), {INTERVAL_ARG: interval, "orders_source": OrdersSource(url=url)}


def _measure_size(ws: Workspace, server: S3Server, orders: int) -> dict:
    frame, available = _orders_frame(ws, orders)
    folder = ws.dir(f"micro/storage/{orders}")
    s3_root = server.root(f"orders-{orders}")
    roots = {"local": str(folder / "warehouse"), "s3": s3_root}
    backends = {name: Backend(name, Warehouse(roots[name]), Catalog(f"sqlite:///{folder / f'catalog_{name}.db'}"))
                for name in BACKENDS}
    samples: dict[str, dict[str, list[float]]] = {op: {b: [] for b in BACKENDS} for op in OPERATIONS}
    for n in range(WARMUP + REPETITIONS):
        # Alternate which backend goes first, so that neither always runs right after the other's writes.
        for backend in (backends[name] for name in (BACKENDS if n % 2 == 0 else BACKENDS[::-1])):
            write_s, read_s = _write_and_read(backend, frame, n)
            gate_s = _gate(backend, frame, available, n)
            if n >= WARMUP:
                for op, seconds in zip(OPERATIONS, (write_s, read_s, gate_s), strict=True):
                    samples[op][backend.name].append(seconds)
    published = backends["s3"].catalog.current(RAW_ORDERS, DAY)
    out = {"orders": orders, "rows": len(frame), "parquet_bytes": UPath(published.path).stat().st_size,
           # Counted in the bucket itself, not through the warehouse: proof that the S3 side did write there.
           "s3_objects": len(S3FileSystem().find(s3_root))}
    for op in OPERATIONS:
        local, s3 = latency(samples[op]["local"]), latency(samples[op]["s3"])
        out[op] = {"local": local, "s3": s3, "p50_ratio": ratio(s3, local, "p50_ms"),
                   "p90_ratio": ratio(s3, local, "p90_ms"),
                   "p50_added_ms": round(s3["p50_ms"] - local["p50_ms"], 3)}
    return out


def run(ws: Workspace) -> dict:
    # Context for a shared machine: load slows the local work (CPU-bound) more than it slows S3's waits, so a
    # busier machine shows a lower ratio at the larger size; what S3 adds moves less.
    load_before = os.getloadavg()[0]
    with s3_server(ws.dir("micro/storage/logs")) as server, aws_environment(server):
        try:
            sizes = {str(orders): _measure_size(ws, server, orders) for orders in ORDERS_PER_DAY}
        finally:
            dispose_all()
    return {"server": "moto_server on 127.0.0.1, its own process", "catalog": "SQLite", "day": DAY,
            "repetitions": REPETITIONS, "warmup": WARMUP,
            "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "packages": {name: metadata.version(name) for name in S3_PACKAGES}, "sizes": sizes}


def main() -> None:
    """This micro-benchmark alone: a results file (``bench/results/<stamp>-warehouse_s3_vs_local.json``, the
    shape ``python -m bench.storage_report`` renders) and its section of docs/BENCHMARKS.md on stdout."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    workspace = Workspace()
    try:
        result = run(workspace)
    finally:
        workspace.close()
    results = {"timestamp": stamp, "command": "python -m bench.micro.storage", "machine": describe_machine(),
               "micro": {KEY: result}}
    path = REPO / "bench" / "results" / f"{stamp}-{KEY}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print("\n".join(storage_section(result)))
    print(f"results in {path.relative_to(REPO)}", file=sys.stderr)


if __name__ == "__main__":
    main()
