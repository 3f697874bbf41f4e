"""One evaluation of the ``backfill_driver`` sensor on an instance that holds a history, against the same
evaluation on a small one: a tick should cost what the open request's changes cost, not what the instance holds.

Each instance is a real ``DagsterInstance`` (the project's dagster.yaml: run queue, slot limits; SQLite storage in
a temporary DAGSTER_HOME) and a SQLite catalog. It holds ``runs`` finished runs (of ``closed`` closed requests,
every day a published version of each asset in the catalog, a rejected one every tenth) and one open request of
``DAYS`` days of the three orders assets, one interval per run, ``DONE`` days of it finished and ``max_active``
(2) runs in flight. Timed, evaluations of the sensor through ``build_sensor_context``: ``CHANGING_TICKS`` that
each settle the two runs finished since the one before and submit two more (made runs and finished at once here,
as if the daemon launched them), then ``IDLE_TICKS`` while every slot is taken and nothing changes (most ticks of a
long request). The first tick's decisions meet runs of others in flight (production, a UI range run): the cells
they write must be left alone. ``PROFILE=1`` in the environment prints the profile of every timed tick.

With ``--days D`` it measures instead one open request by its size (``driver_tick_request.py``): ``python -m
bench.micro.driver_tick --days 3650 --done 1000 [--per-run auto] [--location ten-years] [--reps 3] [--idle 5]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import dagster as dg
import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.identity import make_version_id
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.request_input import RequestInput, build_spec
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.plan.planning import run_key
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import request_items, requests, versions
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR

from ..dagster_home import make_home, open_instance
from ..environ import environment
from ..locations import LOCATIONS, TEN_YEARS
from ..orders import DEFS, GRAPH
from ..plain import ASSETS, CALENDAR
from ..workspace import Workspace
from . import synth

SIZES = {"small": {"runs": 200, "closed": 5, "queued": 20}, "large": {"runs": 2000, "closed": 50, "queued": 400}}
DAYS = 30  # the open request
DONE = 10  # of its days finished before the measured ticks
HISTORY_DAYS = 90  # the days the finished runs and closed requests cover
FIRST = "2022-09-01"
OPEN_FIRST = "2022-10-01"
MAX_ACTIVE = 2
CHANGING_TICKS = 7
IDLE_TICKS = 9


def _environment(home: Path):
    """DAGSTER_HOME for the sensor's resource (the catalog under it); restored after."""
    return environment({"DAGSTER_HOME": str(home)}, unset=("BACKFILL_CATALOG_URL",))


def _version_row(asset: str, key: str, run_id: str, request_id: str, state: VersionState, now: str) -> dict:
    interval = CALENDAR.interval(key)
    published = state is VersionState.PUBLISHED
    return dict(
        version_id=make_version_id(asset, key, run_id, 1), asset=asset, partition_key=key,
        interval_start=iso(interval.start), interval_end=iso(interval.end), run_id=run_id, dagster_run_id=run_id,
        attempt_no=1, request_id=request_id, lane=T.LANE_BACKFILL, code_version="bench", params_digest="0" * 16,
        state=state.value, path=f"/synthetic/{asset}/{key}/{run_id}", rows=100, sha256="0" * 64,
        stats_json="{}", checks_json="[]", input_versions_json="{}", error=None if published else "synthetic",
        requested_at=now, started_at=now, ended_at=now, published_at=now if published else None, created_at=now,
    )


def _run(
    instance: dg.DagsterInstance, tags: dict[str, str], status: dg.DagsterRunStatus, assets: list[str] = ASSETS
) -> str:
    run = dg.DagsterRun(
        job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), status=status, tags=tags,
        asset_selection=frozenset(dg.AssetKey(a) for a in assets),
    )
    instance.add_run(run)
    return run.run_id


def _history(instance: dg.DagsterInstance, catalog: Catalog, runs: int, closed: int) -> None:
    """``runs`` finished runs spread over ``closed`` closed requests, with their versions, requests and cells."""
    keys = synth.days(HISTORY_DAYS, FIRST)
    now = iso(utc_now())
    vrows, crows = [], []
    request_ids = [f"req-20220101-{n:08x}" for n in range(closed)]
    for n in range(runs):
        request_id = request_ids[n % closed]
        key = keys[(n // closed) % len(keys)]
        failed = n % 10 == 9
        tags = {T.REQUEST_ID: request_id, T.LANE: T.LANE_BACKFILL, T.DAGSTER_PARTITION: key,
                RUN_KEY_TAG: run_key(request_id, key, 1 + n // (closed * len(keys)))}
        status = dg.DagsterRunStatus.FAILURE if failed else dg.DagsterRunStatus.SUCCESS
        run_id = _run(instance, tags, status)
        state = VersionState.REJECTED if failed else VersionState.PUBLISHED
        vrows.extend(_version_row(a, key, run_id, request_id, state, now) for a in ASSETS)
        crows.extend(dict(request_id=request_id, asset=a, partition_key=key, ordinal=n * len(ASSETS) + i,
                          origin="planned", decision=M.REJECTED if failed else M.PUBLISHED, run_id=run_id,
                          updated_at=now) for i, a in enumerate(ASSETS))
    with catalog.engine.begin() as conn:
        for request_id in request_ids:
            row = synth.request_row(request_id, list(ASSETS), keys)
            conn.execute(requests.insert().values(**row | {"status": M.COMPLETED}))
        # One cell per (request, asset, day): a re-run of a day in the same request keeps its newest.
        unique = {(c["request_id"], c["asset"], c["partition_key"]): c for c in crows}
        synth._insert(conn, request_items, list(unique.values()))
        synth._insert(conn, versions, vrows)


def _queued_elsewhere(instance: dg.DagsterInstance, queued: int) -> None:
    """``queued`` runs of a UI backfill, created and not started yet, for days after the open request."""
    keys = synth.days(queued, "2023-01-01")
    for key in keys:
        _run(instance, {T.DAGSTER_BACKFILL: "uibackfill", T.DAGSTER_PARTITION: key}, dg.DagsterRunStatus.NOT_STARTED)


def _writers_of_open_days(instance: dg.DagsterInstance) -> dict[tuple[str, str], str]:
    """Runs of others in flight that write cells the first tick decides: a production run of one day's
    daily_revenue, a UI range run whose days include the next two (order_facts), a chunk run beside them."""
    keys = synth.days(DAYS, OPEN_FIRST)
    first, second = keys[DONE + MAX_ACTIVE], keys[DONE + MAX_ACTIVE + 1]
    production = dg.DagsterRun(
        job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED,
        tags={T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PARTITION: first},
        asset_selection=frozenset({dg.AssetKey("daily_revenue")}),
    )
    ranged = dg.DagsterRun(
        job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTING,
        tags={T.DAGSTER_BACKFILL: "uirange", T.DAGSTER_RANGE_START: second,
              T.DAGSTER_RANGE_END: keys[DONE + MAX_ACTIVE + 2]},
        asset_selection=frozenset({dg.AssetKey("order_facts")}),
    )
    chunk = dg.DagsterRun(
        job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED,
        tags={T.CHUNK_FIRST: "2023-06-01", T.CHUNK_LAST: "2023-06-30", T.CHUNK_ASSETS: ",".join(ASSETS)},
    )
    for run in (production, ranged, chunk):
        instance.add_run(run)
    return {("daily_revenue", first): production.run_id, ("order_facts", second): ranged.run_id,
            ("order_facts", keys[DONE + MAX_ACTIVE + 2]): ranged.run_id}


def _open_request(instance: dg.DagsterInstance, catalog: Catalog, loaded: str) -> str:
    """The open request: ``DONE`` days finished (runs SUCCESS, versions published), ``MAX_ACTIVE`` in flight."""
    keys = synth.days(DAYS, OPEN_FIRST)
    spec = build_spec(GRAPH, keys[-1], RequestInput(
        assets=list(ASSETS), from_day=keys[0], to_day=keys[-1], reprocess="completed", max_active=MAX_ACTIVE,
        requested_by="bench", reason="tick bench",
        partitions_per_run=1,  # one run per interval, as contender O (the tick that cost 1.6 s)
    ))
    record = Ledger(catalog).create(M.new_request_id(utc_now()), spec, loaded, spec.excluded_cells(GRAPH))
    request_id = record.request_id
    now = iso(utc_now())
    ledger = Ledger(catalog)
    cells = ledger.cells(request_id)
    updates, vrows = [], []
    for index, key in enumerate(keys[: DONE + MAX_ACTIVE]):
        flying = index >= DONE
        tags = {T.REQUEST_ID: request_id, T.LANE: T.LANE_BACKFILL, T.DAGSTER_PARTITION: key,
                RUN_KEY_TAG: run_key(request_id, key, 1), T.SLOT: f"{request_id}/{index % MAX_ACTIVE}"}
        run_id = _run(instance, tags, dg.DagsterRunStatus.STARTED if flying else dg.DagsterRunStatus.SUCCESS)
        for cell in (c for c in cells if c.partition_key == key):
            if flying:
                updates.append(cell.change(decision=M.SUBMITTED, run_key=tags[RUN_KEY_TAG], dagster_run_id=run_id))
            else:
                updates.append(cell.change(decision=M.PUBLISHED, run_key=tags[RUN_KEY_TAG], dagster_run_id=run_id))
                vrows.append(_version_row(cell.asset, key, run_id, request_id, VersionState.PUBLISHED, now))
    ledger.update_cells(request_id, updates)
    with catalog.engine.begin() as conn:
        synth._insert(conn, versions, vrows)
    return request_id


def _launch(
    instance: dg.DagsterInstance, catalog: Catalog, request_id: str, requested: list[dg.RunRequest], finished: bool
) -> None:
    """What the daemon and the runs would do with the run requests: a run each, finished at once (SUCCESS, every
    asset published) or left running."""
    now = iso(utc_now())
    vrows = []
    for request in requested:
        tags = {**request.tags, RUN_KEY_TAG: request.run_key, T.DAGSTER_PARTITION: request.partition_key}
        status = dg.DagsterRunStatus.SUCCESS if finished else dg.DagsterRunStatus.STARTED
        run_id = _run(instance, tags, status, [k.to_user_string() for k in request.asset_selection])
        if finished:
            vrows.extend(_version_row(a.to_user_string(), request.partition_key, run_id, request_id,
                                      VersionState.PUBLISHED, now) for a in request.asset_selection)
    with catalog.engine.begin() as conn:
        synth._insert(conn, versions, vrows)


def _measure(base: Path, runs: int, closed: int, queued: int, profile: bool = False) -> dict:
    home = make_home(base / "home", 3)
    with _environment(home):
        loaded = code_version(sources=GRAPH.code_sources)
        instance = open_instance(home)
        catalog = Catalog(f"sqlite:///{home / 'catalog.db'}")
        try:
            _history(instance, catalog, runs, closed)
            _queued_elsewhere(instance, queued)
            request_id = _open_request(instance, catalog, loaded)
            others = _writers_of_open_days(instance)
            sensor = DEFS.resolve_sensor_def(DRIVER_SENSOR)
            profiler = cProfile.Profile()

            def evaluate() -> tuple[float, list[dg.RunRequest]]:
                context = dg.build_sensor_context(instance=instance, resources={"backfill": BackfillResource()})
                began = time.process_time()
                if profile:
                    profiler.enable()
                requested = list(sensor(context))
                if profile:
                    profiler.disable()
                return time.process_time() - began, requested

            # Changing ticks: each settles the two runs that finished since the last one and submits two more.
            changing = []
            for _ in range(CHANGING_TICKS):
                seconds, requested = evaluate()
                changing.append(seconds)
                assert len(requested) == MAX_ACTIVE, requested
                _launch(instance, catalog, request_id, requested, finished=True)
            # Idle ticks: the two submitted now run, every slot is taken, nothing changes.
            seconds, requested = evaluate()
            _launch(instance, catalog, request_id, requested, finished=False)
            idle = [evaluate()[0] for _ in range(IDLE_TICKS)]
            counts = Ledger(catalog).counts(request_id)
            following = {c.key: c.dagster_run_id for c in Ledger(catalog).cells(request_id)
                         if c.decision == M.FOLLOWING}
            # Never a duplicate of another's run: the cells they write follow that run.
            assert following == others, following
            out = {"runs": len(instance.get_run_ids()), "closed_requests": closed, "queued_elsewhere": queued,
                   "versions": _count(catalog, versions),
                   "changing_tick_median_s": round(statistics.median(changing), 4),
                   "idle_tick_median_s": round(statistics.median(idle), 4),
                   "submitted": counts[M.SUBMITTED], "published": counts[M.PUBLISHED]}
            if profile:
                out["profile"] = _top(profiler)
            return out
        finally:
            instance.dispose()
            dispose_all()


def _count(catalog: Catalog, table: sa.Table) -> int:
    with catalog.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()


def _top(profiler: cProfile.Profile, n: int = 40) -> str:
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats("backfill_assets|get_runs|get_status", n)
    return out.getvalue()


def run(ws: Workspace) -> dict:
    profile = bool(os.environ.get("PROFILE"))
    out = {name: _measure(ws.dir(f"micro/driver_tick_{name}"), **size, profile=profile)
           for name, size in SIZES.items()}
    for kind in ("changing", "idle"):
        key = f"{kind}_tick_median_s"
        out[f"{kind}_large_over_small"] = round(out["large"][key] / out["small"][key], 2)
    out["target_ratio"] = 1.5
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.micro.driver_tick", description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, help="measure one open request of this many days (see request_ticks)")
    parser.add_argument("--done", type=int, default=0, help="of its days, finished before its first tick")
    parser.add_argument("--per-run", default="auto", help="the request's partitions_per_run (auto as B resolves it)")
    parser.add_argument("--location", choices=sorted(LOCATIONS), default=TEN_YEARS.name)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--idle", type=int, default=5, help="idle ticks timed per repetition")
    args = parser.parse_args(argv)
    if args.days is None:
        _history_sizes()
        return
    from .driver_tick_request import request_ticks  # it builds on this module's rows

    with tempfile.TemporaryDirectory(prefix="bench-tick-") as folder:
        result = request_ticks(Path(folder), args.days, args.done, args.per_run, LOCATIONS[args.location],
                               args.reps, args.idle)
    print(json.dumps(result))


def _history_sizes() -> None:
    workspace = Workspace()
    try:
        result = run(workspace)
        profiles = {name: result[name].pop("profile", None) for name in SIZES}
        print(json.dumps(result, indent=2))
        for name, text in profiles.items():
            if text:
                print(f"--- {name}\n{text}")
    finally:
        workspace.close()


if __name__ == "__main__":
    main()
