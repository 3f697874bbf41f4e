"""What opening Dagster's SQLite storage costs, on Dagster's own classes and on the shipped dagster.yaml's (which keep
alembic's script directories, ``integration/runs/dagster_adapter/alembic_scripts.py``): CPU to open an instance on a
home and to start ``RUNS`` runs' event-log files (each run's first event).

Each measurement is a fresh interpreter on a fresh DAGSTER_HOME: one instance opened and one run stored to warm the
process up (imports, the first script directory), then the timed part on a second home. The variants alternate,
``REPS`` times each; figures are medians, the ratio is shipped / dagster. ``python -m bench.micro.alembic_scripts``.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from ..dagster_home import PRODUCT_STORAGE, PRODUCT_YAML
from .alternating import alternate, main, measure_in_fresh_interpreter

RUNS = 20
REPS = 3
VARIANTS = ("dagster", "shipped")


def _home(root: Path, name: str, variant: str) -> Path:
    home = root / name
    home.mkdir()
    config = {k: v for k, v in yaml.safe_load(PRODUCT_YAML.read_text()).items() if k in PRODUCT_STORAGE}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config if variant == "shipped" else {}))
    return home


def _open_and_start_runs(home: Path, runs: int) -> str:
    import dagster as dg

    with dg.DagsterInstance.from_config(str(home)) as instance:
        for _ in range(runs):
            run = instance.create_run_for_job(dg.GraphDefinition("bench_job").to_job())
            instance.report_engine_event("started", run)  # the run's own event-log file is made here
        return type(instance.event_log_storage).__name__


def _measure(variant: str, runs: int, root: Path) -> dict:
    """In this process: warm up on one home, then time opening a second and starting ``runs`` runs on it."""
    _open_and_start_runs(_home(root, "warm", variant), 1)
    home = _home(root, "timed", variant)
    wall, cpu = time.perf_counter(), time.process_time()
    storage = _open_and_start_runs(home, runs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"variant": variant, "storage": storage, "runs": runs, "wall_s": round(wall, 3),
            "cpu_ms": round(cpu * 1000, 1)}


def _one(variant: str, runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-alembic-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
        return measure_in_fresh_interpreter(["-m", "bench.micro.alembic_scripts", "--one", variant, str(runs), tmp],
                                            f"alembic_scripts {variant}", env)


def run(runs: int = RUNS, reps: int = REPS) -> dict:
    measured = alternate(VARIANTS, reps, lambda variant: _one(variant, runs))
    result: dict = {"runs": runs, "reps": reps}
    for variant, found in measured.items():
        cpu = [r["cpu_ms"] for r in found]
        result[variant] = {"storage": found[0]["storage"], "cpu_ms": statistics.median(cpu),
                           "range": [min(cpu), max(cpu)], "cpu_ms_per_run": round(statistics.median(cpu) / runs, 1)}
    result["ratio"] = round(result["shipped"]["cpu_ms"] / result["dagster"]["cpu_ms"], 3)
    return result


if __name__ == "__main__":
    main(_measure, run)
