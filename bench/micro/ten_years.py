"""What an operator meets once a ten-year request is done:
``python -m bench.micro.ten_years <B folder> [--location ten-years]``.

``<B folder>`` is contender B's folder of a kept benchmark run, its home and catalog holding the finished request:
``<workspace>/scale-3650/B`` of ``python -m bench.run --only F,F2,B --reps 1 --days 365 --scale 3650 --location
ten-years --keep ...`` (``<workspace>/rep-0/B`` for the side by side's size). ``--location`` names the orders code
location that run used (bench/locations): ten years of days need the one whose calendar starts on 2016-01-01.
Timed, each the median of ``REPS`` calls:

- the service's ``show``, ``reconcile`` and the dry run (``plan``) of the same request again, in-process, and the
  CLI commands that print them (``request show``, ``reconcile``, ``request create --dry-run``), each a fresh process
  as a user runs it; beside ``reconcile``, what its Dagster facts cost read the way they were before (every
  materialization of the request's days read back), alternating with the way they are read now;
- the driver sensor's ticks while the request ran (read from the home's tick history: count, median, p99, max);
- the asset page's partition health of the gated asset (its GraphQL query, as the webserver runs it against a
  code server of the location), beside the same query on naive Dagster (N): a plain daily asset of a fresh instance
  with Dagster's own storage and as many partitions materialized (runless materializations).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import dagster as dg

from ..dagster_home import dagster_env
from ..locations import DEMO, LOCATIONS, Location
from ..workspace import REPO

REPS = 3
GATED_ASSET = "daily_revenue"

PARTITION_HEALTH = """
query PartitionHealth($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      partitionKeysByDimension { name partitionKeys }
      assetPartitionStatuses {
        ... on TimePartitionStatuses { ranges { startKey endKey status } }
        ... on DefaultPartitionStatuses { materializedPartitions failedPartitions }
      }
    }
  }
}
"""


def _median_s(call: Callable[[], object]) -> dict:
    times = []
    for _ in range(REPS):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3)}


def _request_of(backfills) -> tuple[str, str, str, list[str]]:
    [newest, *_] = backfills.list()
    detail = backfills.show(newest.request.request_id)
    days = sorted({cell.partition_key for cell in detail.cells})
    return newest.request.request_id, days[0], days[-1], sorted({cell.asset for cell in detail.cells})


def service_figures(home: Path, location: Location) -> dict:
    from backfill_assets import backfills_for_instance
    from backfill_assets.engine.model.request_input import RequestInput

    defs = importlib.import_module(location.module).defs
    with dg.DagsterInstance.from_config(str(home)) as instance:
        backfills = backfills_for_instance(defs, instance)
        request_id, first, last, assets = _request_of(backfills)
        again = RequestInput(assets=assets, from_day=first, to_day=last, reprocess="completed")
        return {
            "request_id": request_id, "days": [first, last], "assets": assets,
            "cells": len(backfills.show(request_id).cells),
            "show": _median_s(lambda: backfills.show(request_id)),
            "reconcile": _median_s(lambda: backfills.reconcile(request_id)),
            "dry_run": _median_s(lambda: backfills.plan(again)),
            "reconcile_facts": facts_figures(instance, backfills, request_id),
            "driver_ticks": driver_ticks(instance, request_id),
        }


def facts_figures(instance: dg.DagsterInstance, backfills, request_id: str) -> dict:
    """Reconcile's Dagster facts as read now, against every materialization of the request's days read back (how
    they were read before), alternating, ``REPS`` times each; the two must agree on the request's published
    versions."""
    from backfill_assets.engine.model.settings import Settings
    from backfill_assets.engine.store.catalog import Catalog
    from backfill_assets.integration.runs.reconcile_facts import carried_version_ids, request_run_facts

    catalog = Catalog(Settings.from_env().catalog_url)
    published = {v.version_id for v in catalog.versions_of_request(request_id) if v.published_at}
    days = [cell.key for cell in backfills.show(request_id).cells]
    now, before = [], []
    for _ in range(REPS):
        began = time.perf_counter()
        held_now = request_run_facts(instance, catalog, request_id).materialized_version_ids & published
        now.append(time.perf_counter() - began)
        began = time.perf_counter()
        held_before = carried_version_ids(instance, days) & published
        before.append(time.perf_counter() - began)
    return {"published_versions": len(published), "agree": held_now == held_before,
            "now_median_s": round(statistics.median(now), 3),
            "every_materialization_read_back_median_s": round(statistics.median(before), 3)}


def driver_ticks(instance: dg.DagsterInstance, request_id: str) -> dict:
    """The driver sensor's ticks from the request's first run's creation to its last run's end: how long one
    took (median, p99, max) while the request ran."""
    from backfill_assets.engine.model import tags as T
    from backfill_assets.integration.sensors.driver import DRIVER_SENSOR

    from ..dagster_facts import runs_tagged, sensor_ticks

    records = runs_tagged(instance, T.REQUEST_ID, request_id)
    began = min(r.create_timestamp.timestamp() for r in records)
    ended = max((r.end_time or 0.0) for r in records)
    ticks = [t for t in sensor_ticks(instance, DRIVER_SENSOR, after=began - 60)
             if t.end_timestamp and t.timestamp <= ended]
    durations = sorted(t.end_timestamp - t.timestamp for t in ticks)
    if not durations:
        return {"ticks": 0}
    p99 = statistics.quantiles(durations, n=100, method="inclusive")[98] if len(durations) > 1 else durations[0]
    return {"ticks": len(durations), "median_s": round(statistics.median(durations), 3), "p99_s": round(p99, 3),
            "max_s": round(durations[-1], 3), "runs": len(records)}


def cli_figures(env: dict, figures: dict) -> dict:
    cli = [str(Path(sys.executable).parent / "backfill-assets")]
    first, last = figures["days"]
    commands = {
        "request show": ["request", "show", figures["request_id"], "--json"],
        "reconcile": ["reconcile", figures["request_id"], "--json"],
        "request create --dry-run": ["request", "create", "--assets", ",".join(figures["assets"]), "--from", first,
                                     "--to", last, "--reprocess", "completed", "--dry-run", "--json"],
    }
    return {name: _median_s(lambda argv=argv: subprocess.run([*cli, *argv], env=env, check=True,
                                                             capture_output=True))
            for name, argv in commands.items()}


def _partition_health(workspace: Path, instance: dg.DagsterInstance, asset: str) -> dict:
    from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

    with define_out_of_process_context(str(workspace), None, instance) as context:
        def query() -> dict:
            result = execute_dagster_graphql(context, PARTITION_HEALTH, {"assetKey": {"path": [asset]}})
            assert not result.errors, result.errors
            return result.data

        node = query()["assetNodeOrError"]
        ranges = node["assetPartitionStatuses"].get("ranges") or []
        return {"partitions": len(node["partitionKeysByDimension"][0]["partitionKeys"]),
                "ranges": len(ranges), **_median_s(query)}


def _workspace_file(folder: Path, target: str) -> Path:
    """A workspace loading ``target``: a module name, or a Python file's path."""
    path = folder / "workspace.yaml"
    entry = f"python_file: {target}" if target.endswith(".py") else f"python_module: {{module_name: {target}}}"
    path.write_text(f"load_from:\n  - {entry}\n")
    return path


NAIVE_MODULE = '''
import dagster as dg

@dg.asset(partitions_def=dg.DailyPartitionsDefinition(start_date="{first_day}", timezone="Asia/Shanghai"))
def naive_daily(context) -> None:
    pass

defs = dg.Definitions(assets=[naive_daily])
'''


def naive_figures(partitions: list[str], first_day: str) -> dict:
    """N: Dagster's own storage, a plain daily asset from ``first_day`` with ``partitions`` materialized."""
    with tempfile.TemporaryDirectory(prefix="bench-ten-years-") as tmp:
        folder = Path(tmp)
        (folder / "naive_ten_years.py").write_text(NAIVE_MODULE.replace("{first_day}", first_day))
        (folder / "home").mkdir()
        with dg.instance_for_test(temp_dir=str(folder / "home")) as instance:
            for key in partitions:
                instance.report_runless_asset_event(dg.AssetMaterialization("naive_daily", partition=key))
            workspace = _workspace_file(folder, str(folder / "naive_ten_years.py"))
            return _partition_health(workspace, instance, "naive_daily")


def run(b_folder: Path, location: Location = DEMO) -> dict:
    home = b_folder / "home"
    source = b_folder.parent.parent / "source.db"
    env = dagster_env(home, f"sqlite:///{source if source.exists() else b_folder.parent / 'source.db'}",
                      BACKFILL_MODULE=location.module)
    os.environ.update({k: v for k, v in env.items() if k.startswith(("DAGSTER_", "BACKFILL_"))})
    figures = service_figures(home, location)
    result = {"location": location.name, "service": figures, "cli": cli_figures(env, figures)}
    with dg.DagsterInstance.from_config(str(home)) as instance, tempfile.TemporaryDirectory() as tmp:
        result["ui_gated"] = _partition_health(_workspace_file(Path(tmp), location.module), instance, GATED_ASSET)
    first, last = figures["days"]
    from ..plain import CALENDAR

    result["ui_naive"] = naive_figures(list(CALENDAR.keys_between(first, last)), location.first_day)
    result["ui_gated_over_naive"] = round(result["ui_gated"]["median_s"] / result["ui_naive"]["median_s"], 2)
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    parser = argparse.ArgumentParser(prog="python -m bench.micro.ten_years", description=__doc__.splitlines()[0])
    parser.add_argument("b_folder", type=Path, help="contender B's folder of a kept run (holds home/)")
    parser.add_argument("--location", choices=list(LOCATIONS), default=DEMO.name,
                        help="the orders code location the kept run used")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures to this JSON file")
    args = parser.parse_args()
    figures = run(args.b_folder, LOCATIONS[args.location])
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
