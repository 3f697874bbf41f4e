"""Micro-benchmarks of the product's hot paths, each against a plain baseline measured in the same run."""

from __future__ import annotations

import time
from typing import Callable

from ..storage_report import KEY as WAREHOUSE_S3_VS_LOCAL
from ..workspace import Workspace


def run_all(pg_url: str, ws: Workspace, log: Callable[[str], None] = print) -> dict:
    from . import (
        cas,
        chunk_step,
        driver_tick,
        idle_daemon,
        lookup,
        planning,
        process_gc,
        propagation,
        reconcile,
        storage,
    )

    steps = {
        "publish_cas": lambda: cas.run(pg_url),
        "current_lookup": lambda: lookup.run(pg_url, ws),
        "plan_10y": lambda: planning.run(ws),
        "reconcile_10k": lambda: reconcile.run(pg_url, ws),
        "propagation_10k": lambda: propagation.run(pg_url, ws),
        "driver_tick": lambda: driver_tick.run(ws),
        WAREHOUSE_S3_VS_LOCAL: lambda: storage.run(ws),
        "chunk_step": lambda: chunk_step.run(),
        "idle_daemon": lambda: idle_daemon.run(),
        "process_gc": lambda: process_gc.run(),
    }
    results = {}
    for name, step in steps.items():
        started = time.monotonic()
        results[name] = step()
        log(f"  micro {name} ({time.monotonic() - started:.1f} s): {results[name]}")
    return results
