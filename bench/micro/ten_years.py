"""What an operator meets once a ten-year request is done: ``python -m bench.micro.ten_years <B folder>``.

``<B folder>`` is contender B's folder of a kept benchmark run (``python -m bench.run --only B --days 365 --keep``:
``<workspace>/rep-0/B``), its home and catalog holding the finished request. Ten years is the aim, but the orders
example's partitions start on 2022-09-01: a request can reach back no further than that (docs/BENCHMARKS.md, "Ten
years: not measured"). Timed, each the median of ``REPS`` calls:

- the service's ``show``, ``reconcile`` and the dry run (``plan``) of the same request again, in-process, and the
  CLI commands that print them (``request show``, ``reconcile``, ``request create --dry-run``), each a fresh process
  as a user runs it;
- the asset page's partition health of the gated asset (its GraphQL query, as the webserver runs it against a
  code server of the location), beside the same query on naive Dagster (N): a plain daily asset of a fresh instance
  with Dagster's own storage and as many partitions materialized (runless materializations).
"""

from __future__ import annotations

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
from ..workspace import REPO

REPS = 3
MODULE = "backfill_assets.examples.orders.definitions"
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


def service_figures(home: Path) -> dict:
    from backfill_assets import backfills_for_instance
    from backfill_assets.engine.model.request_input import RequestInput
    from backfill_assets.examples.orders.definitions import defs

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
        }


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

@dg.asset(partitions_def=dg.DailyPartitionsDefinition(start_date="2022-09-01", timezone="Asia/Shanghai"))
def naive_daily(context) -> None:
    pass

defs = dg.Definitions(assets=[naive_daily])
'''


def naive_figures(partitions: list[str]) -> dict:
    """N: Dagster's own storage, a plain daily asset with ``partitions`` materialized."""
    with tempfile.TemporaryDirectory(prefix="bench-ten-years-") as tmp:
        folder = Path(tmp)
        (folder / "naive_ten_years.py").write_text(NAIVE_MODULE)
        (folder / "home").mkdir()
        with dg.instance_for_test(temp_dir=str(folder / "home")) as instance:
            for key in partitions:
                instance.report_runless_asset_event(dg.AssetMaterialization("naive_daily", partition=key))
            workspace = _workspace_file(folder, str(folder / "naive_ten_years.py"))
            return _partition_health(workspace, instance, "naive_daily")


def run(b_folder: Path) -> dict:
    home = b_folder / "home"
    source = b_folder.parent.parent / "source.db"
    env = dagster_env(home, f"sqlite:///{source if source.exists() else b_folder.parent / 'source.db'}")
    os.environ.update({k: v for k, v in env.items() if k.startswith(("DAGSTER_", "BACKFILL_"))})
    figures = service_figures(home)
    result = {"service": figures, "cli": cli_figures(env, figures)}
    with dg.DagsterInstance.from_config(str(home)) as instance, tempfile.TemporaryDirectory() as tmp:
        result["ui_gated"] = _partition_health(_workspace_file(Path(tmp), MODULE), instance, GATED_ASSET)
    first, last = figures["days"]
    from ..plain import CALENDAR

    result["ui_naive"] = naive_figures(list(CALENDAR.keys_between(first, last)))
    result["ui_gated_over_naive"] = round(result["ui_gated"]["median_s"] / result["ui_naive"]["median_s"], 2)
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    print(json.dumps(run(Path(sys.argv[1])), indent=1))
