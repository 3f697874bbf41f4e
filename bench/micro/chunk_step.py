"""One batched (chunk) run of the orders location in-process, on Dagster's own SQLite storage and on the storage the
shipped dagster.yaml configures (Dagster's classes, keeping their engines and connections): CPU per gated asset-day.

Each measurement is a fresh interpreter on a fresh DAGSTER_HOME with the same seeded source: a two-day chunk run
warms the process up, then one chunk run of ``DAYS`` days x 3 assets is timed. The variants alternate, ``REPS``
times each; the figures are medians and the ratio is ours / Dagster's. ``python -m bench.micro.chunk_step`` runs it
alone. ``PROFILE=1`` prints the timed run's profile (cProfile, on the wall clock; ``PROFILE=cpu``: on the CPU clock;
``PROFILE_OUT=<file>`` also saves it whole); ``PROFILE=sample`` samples it on the CPU clock instead
(``cpu_sampler.py``: shares undistorted by cProfile's cost per Python call). ``CHUNK_ORDERS_PER_DAY``: the source's
orders per day (default ``ORDERS_PER_DAY``; the benchmark's own size is 20,000).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import yaml

from ..dagster_home import PRODUCT_STORAGE, PRODUCT_YAML
from .alternating import alternate, main, measure_in_fresh_interpreter
from .cpu_sampler import CpuSampler

DAYS = 30
REPS = 3
ORDERS_PER_DAY = 500
FIRST = date(2022, 9, 1)
VARIANTS = ("dagster", "shipped")


def _measure(variant: str, days: int, home: Path) -> dict:
    """In this process: seed, warm up, time one chunk run (``variant``: which storage the instance uses)."""
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ["BACKFILL_CODE_VERSION"] = "bench"
    config = yaml.safe_load(PRODUCT_YAML.read_text())
    if variant == "dagster":
        for block in PRODUCT_STORAGE:
            config.pop(block)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config))

    import dagster as dg

    from backfill_assets.engine.model.settings import Settings
    from backfill_assets.examples.orders.definitions import defs
    from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
    from backfill_assets.examples.orders.source import SourceSystem
    from backfill_assets.integration.runs.local_runs import run_chunk

    from ..plain import CALENDAR

    keys = [(FIRST + timedelta(n)).isoformat() for n in range(days + 2)]
    orders = int(os.environ.get("CHUNK_ORDERS_PER_DAY") or ORDERS_PER_DAY)
    SourceSystem(Settings.from_env().source_url).seed(CALENDAR, keys[0], keys[-1], orders)
    assets = (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert run_chunk(instance, {a: keys[:2] for a in assets}, defs=defs).success
        profile = None
        sampler = CpuSampler() if os.environ.get("PROFILE") == "sample" else None
        if os.environ.get("PROFILE") and sampler is None:
            import cProfile

            # PROFILE=cpu: the profiler's clock is the process's CPU time (a commit's fsync wait is not CPU).
            profile = cProfile.Profile(time.process_time) if os.environ["PROFILE"] == "cpu" else cProfile.Profile()
            profile.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        with sampler or contextlib.nullcontext():
            run = run_chunk(instance, {a: keys[2:] for a in assets}, defs=defs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if sampler is not None:
            sampler.report(int(os.environ.get("PROFILE_TOP") or 80))
        if profile is not None:
            import pstats

            profile.disable()
            pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
            if os.environ.get("PROFILE_OUT"):  # the whole profile, for pstats or snakeviz
                profile.dump_stats(os.environ["PROFILE_OUT"])
        storage = type(instance.event_log_storage).__name__
    assert run.success, run.message
    cells = days * len(assets)
    return {"variant": variant, "storage": storage, "cells": cells, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "cpu_ms_per_asset_day": round(cpu / cells * 1000, 1)}


def _one(variant: str, days: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-chunk-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        return measure_in_fresh_interpreter(["-m", "bench.micro.chunk_step", "--one", variant, str(days), str(home)],
                                            f"chunk_step {variant}")


def run(days: int = DAYS, reps: int = REPS) -> dict:
    measured = alternate(VARIANTS, reps, lambda variant: _one(variant, days))
    result: dict = {"days": days, "assets": 3, "reps": reps}
    for variant, runs in measured.items():
        per_day = [r["cpu_ms_per_asset_day"] for r in runs]
        result[variant] = {"storage": runs[0]["storage"], "cpu_ms_per_asset_day": statistics.median(per_day),
                           "range": [min(per_day), max(per_day)],
                           "wall_s": statistics.median(r["wall_s"] for r in runs)}
    result["ratio"] = round(result["shipped"]["cpu_ms_per_asset_day"] / result["dagster"]["cpu_ms_per_asset_day"], 3)
    return result


if __name__ == "__main__":
    main(_measure, run)
