"""The garbage collector as the product's processes set it (``backfill_assets/process_gc.py``) against CPython's
defaults, on the two things those processes do: import Dagster and a code location, then run forked runs, as the
warm run worker does.

Each measurement is a fresh interpreter on a fresh DAGSTER_HOME; it starts as a script (not through the bench
package, which imports Dagster) so that its import is measured whole. It imports the orders location (CPU timed),
freezes what it imported (the tuned variant only), seeds the source, forks a child that runs one day to warm the
files up, then forks one child per day, one after the other, each running that day of the three assets as
one run, as a warm worker's forked run does; the kernel reports each child's CPU (``os.wait4``). The variants
alternate, ``REPS`` times each; figures are medians and the ratios are tuned / default. ``python -m
bench.micro.process_gc`` runs it alone.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

# Only the standard library up here: the measured process runs this file as a script and times its imports.
DAYS = 10
REPS = 3
ORDERS_PER_DAY = 500
FIRST = date(2022, 9, 1)
VARIANTS = ("default", "tuned")
ASSETS = ("raw_orders", "order_facts", "daily_revenue")
MEASURES = ("import_cpu_s", "run_cpu_ms")


def _keys(days: int) -> list[str]:
    return [(FIRST + timedelta(n)).isoformat() for n in range(days + 2)]


def _point_at(home: Path) -> None:
    os.environ["DAGSTER_HOME"] = str(home)
    os.environ["BACKFILL_CODE_VERSION"] = "bench"


def _seed(days: int, home: Path) -> None:
    """The instance config and the days' orders in the home (after the timed import: seeding adds no import)."""
    from backfill_assets.engine.model.settings import PACKAGE_DIR, Settings
    from backfill_assets.examples.orders.definitions import defs
    from backfill_assets.examples.orders.source import SourceSystem
    from backfill_assets.integration.graphs import graph_of

    (home / "dagster.yaml").write_text((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    keys = _keys(days)
    SourceSystem(Settings.from_env().source_url).seed(graph_of(defs).calendar, keys[0], keys[-1], ORDERS_PER_DAY)


def _forked_run(home: Path, keys: list[str]) -> float:
    """One run of the three assets over ``keys`` in a forked child, as a warm worker's run; the child's CPU seconds."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            import dagster as dg

            from backfill_assets.examples.orders.definitions import defs
            from backfill_assets.integration.runs.local_runs import run_chunk

            with dg.DagsterInstance.from_config(str(home)) as instance:
                code = 0 if run_chunk(instance, {a: keys for a in ASSETS}, defs=defs).success else 1
        finally:
            os._exit(code)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the forked chunk run failed")
    return usage.ru_utime + usage.ru_stime


def _measure(variant: str, days: int, home: Path) -> dict:
    """In this fresh process: import (timed), then a warm-up and a measured forked run."""
    from backfill_assets.process_gc import collect_less_often, freeze_long_lived_objects

    _point_at(home)
    if variant == "tuned":
        collect_less_often()
    cpu = time.process_time()
    import dagster  # noqa: F401

    from backfill_assets.examples.orders.definitions import defs  # noqa: F401
    from backfill_assets.integration.runs import local_runs  # noqa: F401

    import_cpu = time.process_time() - cpu
    if variant == "tuned":
        freeze_long_lived_objects()
    _seed(days, home)
    keys = _keys(days)
    _forked_run(home, keys[:1])
    runs_cpu = [_forked_run(home, [key]) for key in keys[2:]]
    return {"variant": variant, "import_cpu_s": round(import_cpu, 3),
            "run_cpu_ms": round(statistics.median(runs_cpu) * 1000, 1)}


def _one(variant: str, days: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        from bench.micro.alternating import measure_in_fresh_interpreter  # not at the top: see the imports

        # -P: the script's folder (bench/micro, whose module names are generic) stays off sys.path.
        return measure_in_fresh_interpreter(["-P", __file__, "--one", variant, str(days), str(home)],
                                            f"process_gc {variant}")


def _summary(runs: list[dict], key: str) -> dict:
    values = [r[key] for r in runs]
    return {"median": statistics.median(values), "range": [min(values), max(values)]}


def run(days: int = DAYS, reps: int = REPS) -> dict:
    from bench.micro.alternating import alternate

    measured = alternate(VARIANTS, reps, lambda variant: _one(variant, days))
    result: dict = {"days": days, "assets": len(ASSETS), "reps": reps}
    for variant, runs in measured.items():
        result[variant] = {key: _summary(runs, key) for key in MEASURES}
    for key in MEASURES:
        tuned, default = result["tuned"][key]["median"], result["default"][key]["median"]
        result[f"{key}_ratio"] = round(tuned / default, 3)
    return result


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(_measure(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
    else:
        print(json.dumps(run(*(int(a) for a in sys.argv[1:3])), indent=2))
