"""The ``backfill_driver`` sensor's ticks against the size of the open request, not of the instance's history:
``python -m bench.micro.driver_tick --days 3650 --done 1000 [--per-run auto] [--location ten-years]``.

Each repetition is a fresh ``DagsterInstance`` (the project's dagster.yaml, SQLite in a temporary DAGSTER_HOME) and
a SQLite catalog holding one open request of ``days`` days of the three orders assets from the location's first
day (``ten-years``: 2016-01-01, so 3,650 days end before today), ``max_active`` 2, its first ``done`` days
published already (written straight into the ledger, as if earlier ticks had settled them). Timed, evaluations of
the sensor through ``build_sensor_context``, on the wall clock and on the process's CPU clock:

- the **first** tick: it decides the pending cells and submits the first runs;
- a **settlement** tick: every run submitted so far finished (SUCCESS, each of its cells published) since the tick
  before, so it settles all their cells at once (with ``--per-run auto`` at 3,650 days, the project's queue-ahead
  instance: four runs of 366 days, 4,392 cells) and submits the next runs;
- ``idle`` **idle** ticks: the runs it submitted are running, every slot is taken, nothing changes (most ticks of
  a long request).

Prints one JSON line: per kind, the median, p99 (nearest rank), max and values of each clock, and the cells
settled.
``PROFILE=first`` (``settlement``, ``idle``) in the environment prints the profile of each tick of that kind to
stderr (cProfile inflates the times several-fold: for where the time goes, never for figures).
"""

from __future__ import annotations

import cProfile
import importlib
import math
import os
import pstats
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Callable

import dagster as dg
import sqlalchemy as sa

from backfill_assets import graph_of
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.request_input import RequestInput, build_spec
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import request_items, versions
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR

from ..dagster_home import make_home, open_instance
from ..environ import environment
from ..locations import Location
from ..plain import ASSETS
from . import synth
from .driver_tick import _version_row

MAX_ACTIVE = 2
KINDS = ("first", "settlement", "idle")


def _days(graph, first: str, n: int) -> list[str]:
    keys = [first]
    while len(keys) < n:
        keys.append(graph.calendar.next_key(keys[-1]))
    return keys


def _open_request(catalog: Catalog, graph, keys: list[str], done: int, per_run: str, loaded: str) -> str:
    """The open request, its first ``done`` days published (one synthetic run each)."""
    spec = build_spec(graph, keys[-1], RequestInput(
        assets=list(ASSETS), from_day=keys[0], to_day=keys[-1], reprocess="completed", max_active=MAX_ACTIVE,
        requested_by="bench", reason="tick bench", partitions_per_run=per_run,
    ))
    request_id = Ledger(catalog).create(M.new_request_id(utc_now()), spec, loaded, {}).request_id
    if done:
        c = request_items.c
        with catalog.engine.begin() as conn:
            conn.execute(request_items.update().where(c.request_id == request_id, c.partition_key < keys[done])
                         .values(decision=M.PUBLISHED, run_id="synthetic", run_key=f"{request_id}/done/1"))
    return request_id


def _launch(instance: dg.DagsterInstance, catalog: Catalog, request_id: str, requested: list[dg.RunRequest],
            finished: bool) -> None:
    """What the daemon and the runs would do with the run requests: a run each, finished at once (SUCCESS, each of
    its cells published) or left running."""
    now = iso(utc_now())
    by_key: dict[str, list[tuple[str, str]]] = {}
    for cell in Ledger(catalog).cells(request_id):
        if cell.decision == M.SUBMITTED and cell.run_key:
            by_key.setdefault(cell.run_key, []).append(cell.key)
    vrows = []
    for request in requested:
        tags = {**request.tags, RUN_KEY_TAG: str(request.run_key)}
        if request.partition_key:
            tags[T.DAGSTER_PARTITION] = request.partition_key
        run = dg.DagsterRun(job_name=request.job_name or BACKFILL_JOB, run_id=str(uuid.uuid4()), tags=tags,
                            status=dg.DagsterRunStatus.SUCCESS if finished else dg.DagsterRunStatus.STARTED,
                            asset_selection=frozenset(dg.AssetKey(a) for a in ASSETS))
        instance.add_run(run)
        if finished:
            vrows.extend(_version_row(asset, day, run.run_id, request_id, VersionState.PUBLISHED, now)
                         for asset, day in by_key.get(str(request.run_key), []))
    with catalog.engine.begin() as conn:
        synth._insert(conn, versions, vrows)


def _timed(call: Callable[[], list[dg.RunRequest]]) -> tuple[dict, list[dg.RunRequest]]:
    wall, cpu = time.perf_counter(), time.process_time()
    requested = call()
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}, requested


def _maybe_profiled(kind: str, call: Callable[[], list[dg.RunRequest]]) -> Callable[[], list[dg.RunRequest]]:
    if os.environ.get("PROFILE") != kind:
        return call

    def profiled() -> list[dg.RunRequest]:
        profiler = cProfile.Profile()
        requested = profiler.runcall(call)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
        return requested
    return profiled


def _settled(catalog: Catalog, request_id: str) -> int:
    c = request_items.c
    with catalog.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).where(
            c.request_id == request_id, c.decision == M.PUBLISHED, c.run_id != "synthetic")).scalar_one()


def _one_request(base: Path, days: int, done: int, per_run: str, location: Location, idle: int) -> dict:
    """One repetition on a fresh instance: the first tick, a settlement tick, ``idle`` idle ticks."""
    defs = importlib.import_module(location.module).defs
    graph = graph_of(defs)
    home = make_home(base / "home", MAX_ACTIVE)
    with environment({"DAGSTER_HOME": str(home)}, unset=("BACKFILL_CATALOG_URL",)):
        instance = open_instance(home)
        catalog = Catalog(f"sqlite:///{home / 'catalog.db'}")
        try:
            keys = _days(graph, location.first_day, days)
            request_id = _open_request(catalog, graph, keys, done, per_run, code_version(sources=graph.code_sources))
            sensor = defs.resolve_sensor_def(DRIVER_SENSOR)

            def evaluate() -> list[dg.RunRequest]:
                context = dg.build_sensor_context(instance=instance, resources={"backfill": BackfillResource()})
                return list(sensor(context))

            times: dict[str, list[dict]] = {kind: [] for kind in KINDS}
            took, requested = _timed(_maybe_profiled("first", evaluate))
            times["first"].append(took)
            assert requested, "the first tick submitted nothing"
            _launch(instance, catalog, request_id, requested, finished=True)
            took, requested = _timed(_maybe_profiled("settlement", evaluate))
            times["settlement"].append(took)
            settled = _settled(catalog, request_id)
            assert settled > 0, settled
            _launch(instance, catalog, request_id, requested, finished=False)
            # No idle tick once the settlement submitted nothing: every day was in the runs it settled.
            for _ in range(idle if requested else 0):
                took, requested = _timed(_maybe_profiled("idle", evaluate))
                assert not requested, len(requested)
                times["idle"].append(took)
            return {"times": times, "settled": settled, "cells": len(keys) * len(ASSETS),
                    "partitions_per_run": Ledger(catalog).get(request_id).spec.partitions_per_run}
        finally:
            instance.dispose()
            dispose_all()


def _summary(values: list[float]) -> dict:
    ordered = sorted(values)
    p99 = ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]
    return {"median": round(statistics.median(ordered), 4), "p99": round(p99, 4), "max": round(ordered[-1], 4),
            "n": len(ordered), "values": [round(v, 4) for v in values]}


def request_ticks(base: Path, days: int, done: int, per_run: str, location: Location, reps: int, idle: int) -> dict:
    runs = [_one_request(base / f"rep-{n}", days, done, per_run, location, idle) for n in range(reps)]
    out: dict = {"days": days, "done": done, "cells": runs[0]["cells"], "location": location.name,
                 "partitions_per_run": runs[0]["partitions_per_run"], "settled_per_settlement": runs[0]["settled"],
                 "reps": reps}
    for kind in KINDS:
        for clock in ("wall_s", "cpu_s"):
            values = [t[clock] for r in runs for t in r["times"][kind]]
            if values:
                out[f"{kind}_{clock}"] = _summary(values)
    return out
