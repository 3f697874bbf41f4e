"""A finished ten-year request without a 25-minute run: ``python -m bench.micro.reconcile_ten_years [--days 3650]
[--reps 3] [--keep DIR] [--no-commands]``.

The fixture (``build``): a DAGSTER_HOME with the project's dagster.yaml (SQLite storage) and a SQLite catalog holding
one completed request of ``days`` days x the three orders assets on the ten-year location's calendar
(``bench/locations/orders_ten_years.py``, from 2016-01-01), made as B makes it at 3,650 days: chunk runs of 366 days
of the three assets (``backfill/chunk_*`` tags), each a real ``DagsterRun`` ended SUCCESS in Dagster's run storage;
one published version per cell (its run's, the upstream versions it read in its inputs), the pointers and the
publish log; and a materialization of each cell in Dagster's event log carrying its version id (runless events: what
reconcile reads of them is the day's materialized status and the version id). Built in-process in ~1 min
at 3,650 days, most of it Dagster storing 10,950 events; ``--keep DIR`` keeps it (a later call with the same
``--keep`` reuses it).

Timed, the median of ``reps`` calls each:

- in-process, the service on the loaded code location (``backfills_for_instance``): ``show``, ``reconcile``, the
  dry run of the same request again (``plan``); ``PROFILE=reconcile`` (``show``, ``dry_run``) prints the profile of
  one call to stderr (cProfile inflates Python-heavy code several-fold: where the time goes, never figures);
- the commands a user runs, each a fresh process on the wall clock: ``request show``, ``reconcile``,
  ``request create --dry-run``, each with ``--json`` and as text (``... (text)``: its table or lines), with the
  code location's snapshot in place (written by one ``request show``
  that loads the code location first) and, unless ``--no-snapshot-check``, once each without it: both outputs must
  be the same bytes.

Prints one JSON object. Another tree's product code (``git archive`` of a commit) is timed with
``PYTHONPATH=<tree>:<this repository> python -m bench.micro.reconcile_ten_years`` run from outside both.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ..workspace import REPO

DAYS = 3650
PER_RUN = 366
REPS = 3
REQUEST_ID = "req-20260101-7e0ea125"
LOCATION_MODULE = "bench.locations.orders_ten_years"
FIRST_DAY = "2016-01-01"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILL_", "DAGSTER_"))}
    env.update({
        "DAGSTER_HOME": str(home), "BACKFILL_MODULE": LOCATION_MODULE, "BACKFILL_CODE_VERSION": "bench",
        "BACKFILL_SOURCE_URL": f"sqlite:///{home.parent / 'source.db'}",
        # The caller's path first: ``PYTHONPATH=<another tree>:<this one>`` times another tree's product code.
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)])),
    })
    return env


def build(base: Path, days: int) -> dict[str, Any]:
    """The fixture in ``base`` (reused when ``base`` holds one of the same size); what the timings need of it."""
    home = base / "home"
    made = base / "fixture.json"
    if made.exists():
        recorded = json.loads(made.read_text())
        if recorded["days"] == days:
            return recorded
        shutil.rmtree(base)
    base.mkdir(parents=True, exist_ok=True)
    os.environ.update(_env(home))
    os.environ.pop("BACKFILL_CATALOG_URL", None)
    figures = _fill(home, days)
    made.write_text(json.dumps(figures))
    return figures


def _fill(home: Path, days: int) -> dict[str, Any]:
    import dagster as dg

    from backfill_assets import graph_of
    from backfill_assets.engine.model import request_model as M
    from backfill_assets.engine.model.request_input import RequestInput, build_spec
    from backfill_assets.engine.store.catalog import Catalog
    from backfill_assets.engine.store.db import dispose_all
    from backfill_assets.engine.store.ledger import Ledger

    from ..dagster_home import make_home, open_instance
    from ..plain import ASSETS

    began = time.perf_counter()
    graph = graph_of(importlib.import_module(LOCATION_MODULE).defs)
    make_home(home, 2)
    instance = open_instance(home)
    catalog = Catalog(f"sqlite:///{home / 'catalog.db'}")
    try:
        keys = [FIRST_DAY]
        while len(keys) < days:
            keys.append(graph.calendar.next_key(keys[-1]))
        assets = list(ASSETS)
        spec = build_spec(graph, keys[-1], RequestInput(
            assets=assets, from_day=keys[0], to_day=keys[-1], reprocess="completed", max_active=2,
            requested_by="bench", reason="ten years, synthetic", partitions_per_run=str(min(PER_RUN, days)),
        ))
        Ledger(catalog).create(REQUEST_ID, spec, "bench", {})
        runs = _runs(instance, keys, assets, min(PER_RUN, days))
        _published(catalog, graph, keys, assets, runs)
        Ledger(catalog).set_status(REQUEST_ID, M.COMPLETED)
        stored = _materializations(instance, catalog)
        return {"days": days, "cells": days * len(assets), "runs": len(set(runs.values())), "assets": assets,
                "first": keys[0], "last": keys[-1], "request_id": REQUEST_ID, "home": str(home),
                "materializations": stored, "build_s": round(time.perf_counter() - began, 1),
                "dagster": dg.__version__}
    finally:
        instance.dispose()
        dispose_all()


def _runs(instance: Any, keys: list[str], assets: list[str], per_run: int) -> dict[str, str]:
    """A chunk run ended SUCCESS per ``per_run`` days of the assets, as the driver tags them: day → run id."""
    import dagster as dg

    from backfill_assets.engine.model import tags as T
    from backfill_assets.integration.jobs import BACKFILL_JOB
    from backfill_assets.integration.runs.runs import RUN_KEY_TAG

    run_of: dict[str, str] = {}
    for n, start in enumerate(range(0, len(keys), per_run)):
        chunk = keys[start : start + per_run]
        tags = {T.REQUEST_ID: REQUEST_ID, T.LANE: T.LANE_BACKFILL, T.CODE_VERSION: "bench",
                T.CHUNK_FIRST: chunk[0], T.CHUNK_LAST: chunk[-1], T.CHUNK_ASSETS: ",".join(assets),
                RUN_KEY_TAG: f"{REQUEST_ID}/{n}", T.SLOT: f"{REQUEST_ID}/{n % 2}"}
        run = dg.DagsterRun(job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), tags=tags,
                            status=dg.DagsterRunStatus.SUCCESS,
                            asset_selection=frozenset(dg.AssetKey(a) for a in assets))
        instance.add_run(run)
        run_of.update((day, run.run_id) for day in chunk)
    return run_of


def _published(catalog: Any, graph: Any, keys: list[str], assets: list[str], run_of: dict[str, str]) -> None:
    """Each cell's published version (its run's), its pointer and publish-log row, its ledger cell settled."""
    import sqlalchemy as sa

    from backfill_assets.engine.model import request_model as M
    from backfill_assets.engine.model.identity import make_version_id
    from backfill_assets.engine.model.intervals import iso, utc_now
    from backfill_assets.engine.model.states import VersionState
    from backfill_assets.engine.store.schema import log_head, pointers, publish_log, request_items, versions

    from . import synth

    now = iso(utc_now())
    vrows, prows, lrows = [], [], []
    for key in keys:
        interval = graph.calendar.interval(key)
        run_id = run_of[key]
        ids = {a: make_version_id(a, key, run_id, 1) for a in assets}
        for asset in assets:
            inputs = {f"{up}/{key}": ids[up] for up in graph[asset].upstream if up in ids}
            vrows.append(dict(
                version_id=ids[asset], asset=asset, partition_key=key, interval_start=iso(interval.start),
                interval_end=iso(interval.end), run_id=run_id, dagster_run_id=run_id, attempt_no=1,
                request_id=REQUEST_ID, lane="backfill", code_version="bench", params_digest="0" * 16,
                state=VersionState.PUBLISHED.value, path=f"/synthetic/{asset}/date={key}/_runs/{run_id}", rows=1000,
                sha256="0" * 64, stats_json=json.dumps({"amount": {"sum": 1.0}}), checks_json="[]",
                input_versions_json=json.dumps(inputs), source_fingerprint="0" * 16 if not inputs else None,
                requested_at=now, started_at=now, ended_at=now, published_at=now, created_at=now,
                worker="bench", params_json="{}",
            ))
            prows.append(dict(asset=asset, partition_key=key, version_id=ids[asset], previous_version_id=None,
                              updated_at=now))
            lrows.append(dict(seq=len(lrows) + 1, asset=asset, partition_key=key, version_id=ids[asset],
                              previous_version_id=None, action="publish", request_id=REQUEST_ID, lane="backfill",
                              at=now))
    c = request_items.c
    with catalog.engine.begin() as conn:
        for table, rows in ((versions, vrows), (pointers, prows), (publish_log, lrows)):
            synth._insert(conn, table, rows)
        conn.execute(log_head.update().where(log_head.c.id == 1).values(seq=len(lrows)))
        for run_id in sorted(set(run_of.values())):
            days = [k for k, r in run_of.items() if r == run_id]
            conn.execute(request_items.update().where(c.request_id == REQUEST_ID, c.partition_key >= days[0],
                                                      c.partition_key <= days[-1])
                         .values(decision=M.PUBLISHED, run_id=run_id, run_key=f"{REQUEST_ID}/{run_id}",
                                 submitted_at=now, updated_at=now))
        assert conn.execute(sa.select(sa.func.count()).where(
            c.request_id == REQUEST_ID, c.decision != M.PUBLISHED)).scalar_one() == 0


def _materializations(instance: Any, catalog: Any) -> int:
    """A materialization of every published version, carrying its version id, in Dagster's event log."""
    import dagster as dg

    stored = 0
    for version in catalog.versions_of_request(REQUEST_ID, published_only=True):
        instance.report_runless_asset_event(dg.AssetMaterialization(
            version.asset, partition=version.partition_key,
            metadata={"version_id": version.version_id, "request_id": REQUEST_ID}))
        stored += 1
    return stored


# ---- timings ---------------------------------------------------------------------------------------------------

def _median_s(call: Callable[[], object], reps: int) -> dict[str, Any]:
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return {"median_s": round(statistics.median(times), 3), "values": [round(t, 3) for t in times]}


def _profiled(kind: str, call: Callable[[], object]) -> None:
    if os.environ.get("PROFILE") == kind:
        profiler = cProfile.Profile()
        profiler.runcall(call)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(50)


def in_process(fixture: dict[str, Any], reps: int) -> dict[str, Any]:
    """The service on the loaded code location: show, reconcile, the dry run of the same request again."""
    import dagster as dg

    from backfill_assets import backfills_for_instance
    from backfill_assets.engine.model.request_input import RequestInput
    from backfill_assets.engine.store.db import dispose_all

    os.environ.update(_env(Path(fixture["home"])))
    defs = importlib.import_module(LOCATION_MODULE).defs
    request_id = fixture["request_id"]
    again = RequestInput(assets=fixture["assets"], from_day=fixture["first"], to_day=fixture["last"],
                         reprocess="completed")
    with dg.DagsterInstance.from_config(fixture["home"]) as instance:
        backfills = backfills_for_instance(defs, instance)
        calls: dict[str, Callable[[], object]] = {
            "show": lambda: backfills.show(request_id), "reconcile": lambda: backfills.reconcile(request_id),
            "dry_run": lambda: backfills.plan(again)}
        report = backfills.reconcile(request_id)
        assert report.complete and not report.report.gaps, report.report.totals
        out = {name: _median_s(call, reps) for name, call in calls.items()}
        for name, call in calls.items():
            _profiled(name, call)
    dispose_all()
    return out


def commands(fixture: dict[str, Any]) -> dict[str, list[str]]:
    """Each command with ``--json`` under its own name, and as a person reads it (its table or lines) under the
    name with `` (text)``."""
    json_forms = {
        "request show": ["request", "show", fixture["request_id"], "--json"],
        "reconcile": ["reconcile", fixture["request_id"], "--json"],
        "request create --dry-run": ["request", "create", "--assets", ",".join(fixture["assets"]), "--from",
                                     fixture["first"], "--to", fixture["last"], "--reprocess", "completed",
                                     "--dry-run", "--json"],
    }
    return {**json_forms, **{f"{name} (text)": argv[:-1] for name, argv in json_forms.items()}}


def _command(argv: list[str], env: dict[str, str], cwd: Path) -> bytes:
    cli = str(Path(sys.executable).parent / "backfill-assets")
    done = subprocess.run([cli, *argv], env=env, cwd=cwd, capture_output=True, check=False)
    if done.returncode not in (0, 1):  # reconcile exits 1 on an incomplete request: still an answer
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.decode()[-2000:]}")
    return done.stdout


def as_commands(fixture: dict[str, Any], reps: int, check: bool) -> dict[str, Any]:
    """Each command a fresh process (wall clock), on the code location's snapshot; with ``check``, its output
    without the snapshot (the code location loaded) compared byte for byte."""
    home = Path(fixture["home"])
    env, cwd = _env(home), Path(fixture["home"]).parent
    cache = home / ".backfill_cache"
    out: dict[str, Any] = {}
    for name, argv in commands(fixture).items():
        loaded = None
        if check:
            shutil.rmtree(cache, ignore_errors=True)
            began = time.perf_counter()
            loaded = _command(argv, env, cwd)
            out[f"{name} (no snapshot)"] = {"wall_s": round(time.perf_counter() - began, 3)}
        _command(commands(fixture)["request show"], env, cwd)  # loads the code location if need be: the snapshot
        quick = _command(argv, env, cwd)
        out[name] = _median_s(lambda argv=argv: _command(argv, env, cwd), reps)
        if loaded is not None:
            out[name]["same_output_without_snapshot"] = loaded == quick
            out[name]["bytes"] = len(quick)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.micro.reconcile_ten_years",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=DAYS)
    parser.add_argument("--reps", type=int, default=REPS)
    parser.add_argument("--keep", type=Path, default=None, help="build the fixture here and keep it (reused)")
    parser.add_argument("--no-commands", action="store_true", help="in-process timings only")
    parser.add_argument("--no-in-process", action="store_true", help="the commands only")
    parser.add_argument("--no-snapshot-check", action="store_true", help="skip the runs without the snapshot")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-recon10y-"))
    try:
        fixture = build(base.resolve(), args.days)
        result: dict[str, Any] = {"fixture": fixture, "load_average": os.getloadavg()}
        if not args.no_in_process:
            result["in_process"] = in_process(fixture, args.reps)
        if not args.no_commands:
            result["commands"] = as_commands(fixture, args.reps, not args.no_snapshot_check)
        result["load_average_after"] = os.getloadavg()
        print(json.dumps(result, indent=1))
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    if str(REPO) not in sys.path:
        sys.path.append(str(REPO))
    main()
