"""An idle ``backfill-assets-daemon`` (the orders location, no request, no run) on Dagster's own SQLite storage
classes and on the shipped ones (Dagster's, keeping their engines and connections): CPU-seconds the daemon and the
processes it started (its code server) used in ``WINDOW_S`` seconds once every daemon had sent a heartbeat.

What a deployment pays while nothing happens: the run queue read every second, the wake-up file polled, heartbeats
and sensor ticks written. The variants alternate, ``REPS`` times each; the figures are medians and the ratio is
shipped / Dagster's. ``python -m bench.micro.idle_daemon`` runs it alone.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from ..cpu_groups import CpuGroups
from ..daemons import daemon_argv
from ..dagster_home import PRODUCT_STORAGE, PRODUCT_YAML, daemons_alive, open_instance
from ..orders import MODULE
from ..services import service, wait_until
from .alternating import alternate

WINDOW_S = 30.0
REPS = 3
READY_TIMEOUT_S = 120.0
SETTLE_S = 5.0  # after the first heartbeats: the code server's first load and the first ticks are start-up
VARIANTS = ("dagster", "shipped")


def _one(variant: str, window_s: float = WINDOW_S) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        home = Path(tmp)
        config = yaml.safe_load(PRODUCT_YAML.read_text())
        if variant == "dagster":
            for block in PRODUCT_STORAGE:
                config.pop(block)
        (home / "dagster.yaml").write_text(yaml.safe_dump(config))
        env = {**os.environ, "DAGSTER_HOME": str(home), "BACKFILL_CODE_VERSION": "bench"}
        # In its own folder, as a deployment's daemon runs: from the repository, the package would be found on the
        # working directory, and the watch of a package installed in editable mode (this one) never exercised.
        with service("daemon", daemon_argv(MODULE), env, home / "logs", cwd=home) as daemon:
            with open_instance(home) as instance:
                wait_until(lambda: daemons_alive(instance, "SENSOR", "QUEUED_RUN_COORDINATOR"),
                           f"the daemon ({variant})", READY_TIMEOUT_S, [daemon])
            time.sleep(SETTLE_S)
            with CpuGroups(sessions={"daemon": [daemon.pid]}) as cpu:
                time.sleep(window_s)
            return cpu.result()["parts_s"]["daemon"]


def run(reps: int = REPS, window_s: float = WINDOW_S) -> dict:
    measured = alternate(VARIANTS, reps, lambda variant: {"cpu_s": _one(variant, window_s)})
    result: dict = {"window_s": window_s, "reps": reps}
    for variant, found in measured.items():
        cpu = [f["cpu_s"] for f in found]
        result[variant] = {"cpu_s": round(statistics.median(cpu), 2), "range": [round(min(cpu), 2), round(max(cpu), 2)]}
    result["ratio"] = round(result["shipped"]["cpu_s"] / result["dagster"]["cpu_s"], 3)
    return result


if __name__ == "__main__":
    # python -m bench.micro.idle_daemon [REPS [WINDOW_S]]: a window past 60 s includes Dagster's workspace reload.
    print(json.dumps(run(*(int(a) for a in sys.argv[1:3])), indent=2))
