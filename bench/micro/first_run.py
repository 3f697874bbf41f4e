"""How soon a request's first run starts: seconds from ``backfill-assets request create`` returning to the first run
of the request STARTED, under Dagster's own ``dagster-daemon run`` and under ``backfill-assets-daemon run``, both on
the shipped ``dagster.yaml`` (the orders location, one ``raw_orders`` day per request); and ``request create``'s own
wall time (a fresh interpreter: Python, Dagster and the code location imported, the request frozen, its first runs
queued by its own driver tick).

``stock_sensor`` is the stock daemon with the request made by a Python caller whose service leaves the first tick to
the driver sensor (``backfills_for_instance(..., first_tick=False)``), as every request was before ``create``
ticked itself: what the daemon's ~5 s pass over its sensors costs.

Each daemon is started once per variant and given a first request that is not measured (its code server and warm
run worker start there, as on any daemon that has run before); then ``REPS`` requests are made one after another,
each waited for to finish. Figures are medians, with the range: ``after_return_s`` from the create's process
exiting to the first run's start (negative: it started before), ``from_invocation_s`` from the create's invocation,
``create_s`` the create's process.
``python -m bench.micro.first_run [REPS]`` runs it alone.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import yaml

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.source import SourceSystem

from ..daemons import daemon_argv
from ..dagster_home import PRODUCT_YAML, daemons_alive, open_instance
from ..orders import GRAPH, MODULE
from ..services import service, wait_until
from ..workspace import REPO

REPS = 5
VARIANTS = ("stock", "product", "stock_sensor")
FIGURES = ("after_return_s", "from_invocation_s", "create_s")
FIRST_DAY = "2022-09-01"
ASSET = "raw_orders"
READY_TIMEOUT_S = 120.0
RUN_TIMEOUT_S = 120.0
FINISHED = {dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED}
# A create whose service leaves its first tick to the driver sensor (``first_tick=False``), as every Python
# caller's did before ``backfills_for_instance`` ticked by default.
PYTHON_CREATE = (
    "import sys, dagster as dg; from backfill_assets import backfills_for_instance; "
    "from backfill_assets.service import RequestInput; from {module} import defs; "
    "backfills_for_instance(defs, dg.DagsterInstance.get(), first_tick=False).create("
    "RequestInput(assets=[sys.argv[1]], from_day=sys.argv[2], to_day=sys.argv[2], reprocess='completed', "
    "requested_by='bench'))"
).format(module=MODULE)


def _create_argv(variant: str, day: str) -> list[str]:
    if variant == "stock_sensor":
        return [sys.executable, "-c", PYTHON_CREATE, ASSET, day]
    return [dagster_bin("backfill-assets"), "-m", MODULE, "request", "create", "--assets", ASSET, "--from", day,
            "--to", day, "--reprocess", "completed", "--requested-by", "bench"]


def _following(count: int) -> list[str]:
    start = date.fromisoformat(FIRST_DAY)
    return [(start + timedelta(days=i)).isoformat() for i in range(count)]


def shipped_home(home: Path, days: list[str]) -> dict[str, str]:
    """``home`` made a DAGSTER_HOME with the shipped dagster.yaml and a source seeded over ``days``; the
    environment its processes run in."""
    (home / "dagster.yaml").write_text(yaml.safe_dump(yaml.safe_load(PRODUCT_YAML.read_text())))
    SourceSystem(f"sqlite:///{home / 'source.db'}").seed(GRAPH.calendar, days[0], days[-1], 20)
    return {**os.environ, "DAGSTER_HOME": str(home), "BACKFILL_CODE_VERSION": "bench",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}


def _request_runs(instance: dg.DagsterInstance, day: str) -> list[dg.RunRecord]:
    return list(instance.get_run_records(dg.RunsFilter(tags={T.DAGSTER_PARTITION: day, T.LANE: T.LANE_BACKFILL})))


def _one_request(instance: dg.DagsterInstance, variant: str, day: str, env: dict[str, str],
                 alive: Callable[[], None]) -> dict:
    """Make one request for ``day``; seconds of the create and from its return to its first run STARTED."""
    began = time.time()
    done = subprocess.run(_create_argv(variant, day), cwd=REPO, env=env, capture_output=True, text=True, check=False)
    returned = time.time()
    if done.returncode != 0:
        raise RuntimeError(f"create failed ({variant}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    wait_until(lambda: any(r.start_time for r in _request_runs(instance, day)), f"a run of {day}", RUN_TIMEOUT_S,
               poll=0.02)
    first_start = min(r.start_time for r in _request_runs(instance, day) if r.start_time)
    wait_until(lambda: all(r.dagster_run.status in FINISHED for r in _request_runs(instance, day)),
               f"the runs of {day}", RUN_TIMEOUT_S)
    alive()
    return {"create_s": round(returned - began, 3), "after_return_s": round(first_start - returned, 3),
            "from_invocation_s": round(first_start - began, 3)}


@dataclass
class DaemonHome:
    home: Path
    env: dict[str, str]
    argv: list[str]
    daemon: subprocess.Popen
    instance: dg.DagsterInstance


@contextmanager
def daemon_on_shipped_home(variant: str, days: list[str], prefix: str) -> Iterator[DaemonHome]:
    """A temporary ``shipped_home`` seeded over ``days`` with its daemon (Dagster's own unless ``variant`` is
    ``product``) started and ready."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        home = Path(tmp)
        env = shipped_home(home, days)
        argv = daemon_argv(MODULE, stock=variant != "product")
        with service("daemon", argv, env, home / "logs", cwd=REPO) as daemon:
            instance = open_instance(home)
            try:
                wait_until(lambda: daemons_alive(instance, "SENSOR", "QUEUED_RUN_COORDINATOR"),
                           f"the daemon ({variant})", READY_TIMEOUT_S, [daemon])
                yield DaemonHome(home, env, argv, daemon, instance)
            finally:
                instance.dispose()


def _variant(variant: str, reps: int) -> list[dict]:
    days = _following(reps + 1)
    with daemon_on_shipped_home(variant, days, "bench-first-run-") as running:

        def alive() -> None:
            if running.daemon.poll() is not None:
                raise RuntimeError(f"the daemon exited ({variant})")

        # The first request starts the code server and the warm worker: not measured.
        _one_request(running.instance, variant, days[0], running.env, alive)
        return [_one_request(running.instance, variant, day, running.env, alive) for day in days[1:]]


def _median(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "range": [round(min(values), 3), round(max(values), 3)]}


def run(reps: int = REPS) -> dict:
    result: dict = {"reps": reps, "command": f"python -m bench.micro.first_run {reps}"}
    for variant in VARIANTS:
        found = _variant(variant, reps)
        result[variant] = {figure: _median([f[figure] for f in found]) for figure in FIGURES} | {"each": found}
    # After the return a woken daemon's run may already have started (a negative figure): the ratios are of the
    # seconds from the invocation, which every variant's figure includes.
    start = {v: result[v]["from_invocation_s"]["median"] for v in VARIANTS}
    result["ratios"] = {"stock_to_product": round(start["stock"] / start["product"], 2),
                        "stock_sensor_to_stock": round(start["stock_sensor"] / start["stock"], 2)}
    return result


if __name__ == "__main__":
    print(json.dumps(run(*(int(a) for a in sys.argv[1:2])), indent=2))
