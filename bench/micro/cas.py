"""Publish compare-and-swap latency on PostgreSQL with 8 concurrent publisher processes.

Each publisher owns one cell (8 days of ``raw_orders``) and publishes successive versions of it, so every
publish is a real CAS that supersedes the previous version, and all of them contend for the ``log_head`` row
lock that orders the publish log. Baseline: the same 8 processes running a plain single-row UPDATE + INSERT
transaction (no lock row, no CAS, no state checks) on the same server.

Fair by construction: both races do the same untimed work between two timed transactions — a publisher must
begin and verify each version before publishing it, so the baseline workers do the same (``_prepare``, on cells
of their own) and the server carries the same load in both; only the timed transaction differs.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time

import sqlalchemy as sa

from ..pg import temporary_database
from .stats import latency, ratio

PUBLISHERS = 8
PER_PUBLISHER = 150
WARMUP = 5

_baseline_meta = sa.MetaData()
counters = sa.Table("bench_counters", _baseline_meta, sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("value", sa.Integer, nullable=False))
events = sa.Table("bench_events", _baseline_meta, sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                  sa.Column("worker", sa.Integer, nullable=False), sa.Column("at", sa.Float, nullable=False))


def _prepare(catalog, asset: str, worker: int, i: int) -> str:
    """Begin and verify one version of the worker's own cell (untimed, in both races): its id."""
    from backfill_assets.engine.model.identity import RunIdentity
    from backfill_assets.engine.model.intervals import iso, utc_now

    from ..plain import CALENDAR

    interval = CALENDAR.interval(CALENDAR.keys_between("2022-09-01", "2022-09-08")[worker % 8])
    identity = RunIdentity(asset=asset, interval=interval, logical_run_id=f"w{worker}-{i}",
                           dagster_run_id=f"w{worker}-{i}",
                           request_id=None, code_version="bench", params_digest="0" * 16, lane="backfill",
                           requested_at=None, started_at=iso(utc_now()))
    version = catalog.begin_version(identity)
    catalog.mark_verifying(version.version_id, path="/synthetic", rows=1, sha256="0" * 64, stats={},
                           input_versions={})
    return version.version_id


def _publisher(url: str, worker: int, n: int, start: mp.Event, out: mp.Queue) -> None:
    from backfill_assets.engine.store.catalog import Catalog

    catalog = Catalog(url)
    timings = []
    start.wait()
    for i in range(n + WARMUP):
        version_id = _prepare(catalog, "raw_orders", worker, i)
        began = time.perf_counter()
        catalog.publish(version_id, checks=[])
        if i >= WARMUP:
            timings.append(time.perf_counter() - began)
    out.put(timings)


def _baseline(url: str, worker: int, n: int, start: mp.Event, out: mp.Queue) -> None:
    from backfill_assets.engine.store.catalog import Catalog
    from backfill_assets.engine.store.db import create_engine

    catalog = Catalog(url)
    engine = create_engine(url)
    timings = []
    start.wait()
    for i in range(n + WARMUP):
        _prepare(catalog, "order_facts", worker, i)  # the same untimed work as a publisher's, never published
        began = time.perf_counter()
        with engine.begin() as conn:
            conn.execute(counters.update().where(counters.c.id == worker).values(value=counters.c.value + 1))
            conn.execute(events.insert().values(worker=worker, at=time.time()))
        if i >= WARMUP:
            timings.append(time.perf_counter() - began)
    out.put(timings)


def _race(target, url: str) -> tuple[list[float], float]:
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=target, args=(url, w, PER_PUBLISHER, start, out)) for w in range(PUBLISHERS)]
    for p in procs:
        p.start()
    time.sleep(3.0)  # let every process import and connect before the start signal
    began = time.perf_counter()
    start.set()
    timings = [t for _ in procs for t in _result(out, procs)]
    wall = time.perf_counter() - began
    for p in procs:
        p.join(timeout=60)
    return timings, wall


def _result(out: mp.Queue, procs: list, timeout: float = 600.0) -> list[float]:
    """One publisher's timings; fails at once, with the exit codes, when a publisher died without reporting
    (rather than waiting out the timeout for a result that cannot come)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return out.get(timeout=1.0)
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            if dead:
                raise RuntimeError(f"{len(dead)} publisher process(es) died (exit codes {dead})") from None
    raise TimeoutError(f"no publisher result within {timeout} s")


def run(pg_url: str) -> dict:
    with temporary_database(pg_url, "bench_cas") as url:
        from backfill_assets.engine.store.catalog import Catalog
        from backfill_assets.engine.store.db import dispose_all

        Catalog(url)  # creates the schema once, before the race
        engine = sa.create_engine(url)
        _baseline_meta.create_all(engine)
        with engine.begin() as conn:
            conn.execute(counters.insert(), [{"id": w, "value": 0} for w in range(PUBLISHERS)])
        engine.dispose()
        cas_t, cas_wall = _race(_publisher, url)
        base_t, base_wall = _race(_baseline, url)
        dispose_all()  # close this process's pooled connections so the database can be dropped
    cas, base = latency(cas_t), latency(base_t)
    return {
        "publishers": PUBLISHERS,
        "publishes": len(cas_t),
        "cas": cas | {"per_second": round(len(cas_t) / cas_wall, 1)},
        "baseline_update_insert": base | {"per_second": round(len(base_t) / base_wall, 1)},
        "p50_ratio": ratio(cas, base, "p50_ms"),
        "p99_ratio": ratio(cas, base, "p99_ms"),
        "target_p99_ms": 20,
    }
