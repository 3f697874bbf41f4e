"""Child processes of the published-table faults (the forkserver preloads this module): publishers that publish
versions through the catalog and then sync the Iceberg table, the way the gate and its step do, and die where the
test's fault says. Every child takes its whole environment as arguments: the forkserver started with the session's.
"""

from __future__ import annotations

import os
import random
import warnings
from typing import Any

import pandas as pd

from backfill_assets.engine.model.errors import PublishConflict
from backfill_assets.engine.model.settings import TableSettings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.published_tables import PublishedTables
from backfill_assets.engine.wap.faults import AFTER_PUBLISH_COMMIT, ENV_FAULT, ENV_HOLD, fault_point
from tests.engine.catalog_helpers import PASSED
from tests.tables.pg_table_helpers import written

ASSET = "table_faults"
MEASURE = "amount"
NAMESPACE = "published"


def table_settings(config: dict[str, str]) -> TableSettings:
    return TableSettings(("iceberg",), config["iceberg_url"], None, NAMESPACE, None, NAMESPACE, config["warehouse"])


def frame_for(seed: int) -> pd.DataFrame:
    """Rows only one version holds: the row count and the measure's sum tell versions apart to readers that see
    only content (DuckDB, polars)."""
    rows = 2 + seed % 7
    return pd.DataFrame({"n": list(range(rows)), "marker": [f"v{seed}"] * rows,
                         "amount": [seed * 1000.0 + i for i in range(rows)]})


def _install(fault: str | None, hold: str | None) -> None:
    warnings.simplefilter("ignore")
    os.environ.pop(ENV_FAULT, None)
    os.environ.pop(ENV_HOLD, None)
    if fault:
        os.environ[ENV_FAULT] = fault
    if hold:
        os.environ[ENV_HOLD] = hold


def publish_then_sync(config: dict[str, str], plan: list[tuple[str, str, int]], fault: str | None,
                      hold: str | None, results=None) -> None:
    """Publish one version per (day, run id, seed) of ``plan``, crossing ``after_publish_commit`` after each (as the
    gate does), then sync the table once (as the step does after its publishes). ``fault`` SIGKILLs at its point;
    ``hold`` (``<point>=<file>``) waits there while the file exists."""
    _install(fault, hold)
    catalog, warehouse = Catalog(config["catalog_url"]), Warehouse(config["warehouse"])
    for day, run, seed in plan:
        version = written(catalog, warehouse, ASSET, day, run, frame=frame_for(seed))
        catalog.publish(version.version_id, PASSED)
        fault_point(AFTER_PUBLISH_COMMIT)
    report = PublishedTables(table_settings(config)).sync(catalog, [ASSET])
    if results is not None:
        results.put(report.as_dict())


def storm_publisher(config: dict[str, str], name: str, days: list[str], publishes: int, seed: int, barrier,
                    results) -> None:
    """One of several processes publishing versions of overlapping days and syncing after each, all at once."""
    _install(None, None)
    try:
        rng = random.Random(seed)
        catalog, warehouse = Catalog(config["catalog_url"]), Warehouse(config["warehouse"])
        tables = PublishedTables(table_settings(config))
        out: dict[str, Any] = {"name": name, "published": 0, "publish_conflicts": 0, "syncs": 0, "commits": 0,
                               "conflicts": 0, "failed": []}
        barrier.wait(timeout=120)
        for k in range(publishes):
            day = rng.choice(days)
            version = written(catalog, warehouse, ASSET, day, f"{name}-{k}", frame=frame_for(seed * 1000 + k))
            try:
                catalog.publish(version.version_id, PASSED)
                out["published"] += 1
            except PublishConflict as exc:  # another storm process published the day since this one began
                catalog.reject(version.version_id, PASSED, str(exc)[:2000])
                out["publish_conflicts"] += 1
            report = tables.sync(catalog, [ASSET])
            out["syncs"] += 1
            out["commits"] += sum(r.commits for r in report.synced)
            out["conflicts"] += sum(r.conflicts for r in report.synced)
            out["failed"].extend(why for _, why in report.failed)
        results.put(out)
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which counts it as a failure
        results.put({"name": name, "error": f"{type(exc).__name__}: {exc}"})
        barrier.abort()
