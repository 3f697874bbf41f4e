"""What the catalog costs a gated asset-day: ``python -m bench.micro.gate_catalog [CELLS]``.

A fresh SQLite catalog; for each of ``CELLS`` days, two cells (an asset and one reading it) make the catalog calls
a chunk run's step makes for a day: the cell's versions read twice (the op's "already concluded?" and the gate's
"published by an earlier attempt?"), the attempt begun (the asset's claim, WRITING), the upstream's current version
read and the read recorded, VERIFYING, the publish's compare-and-swap. Ten days warm up first. Prints the CPU
milliseconds per cell. Compare two trees by running it on each, alternating (``PYTHONPATH=<tree>``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

from backfill_assets.engine.model.identity import RunIdentity
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.store.catalog import Catalog

from ..plain import CALENDAR

WARM_UP = 10


def _cell(catalog: Catalog, asset: str, key: str, run: str, upstream: str | None = None) -> None:
    for _ in range(2):
        catalog.versions_of(asset, key)
    identity = RunIdentity(asset=asset, interval=CALENDAR.interval(key), logical_run_id=run, dagster_run_id=run,
                           request_id=None, code_version="bench", params_digest="0" * 16, lane="backfill",
                           requested_at=None, started_at=iso(utc_now()), location="bench")
    version = catalog.begin_version(identity)
    if upstream is not None:
        current = catalog.current(upstream, key)
        catalog.record_reads(version.version_id, run, [current] if current else [])
    catalog.mark_verifying(version.version_id, path="/synthetic", rows=1, sha256="0" * 64,
                           stats={"id": {"nulls": 0}}, input_versions={})
    catalog.publish(version.version_id, [{"name": "not_empty", "passed": True}])


def run(cells: int = 150) -> dict:
    keys = CALENDAR.keys_between("2022-09-01", "2023-08-31")[: WARM_UP + cells]
    with tempfile.TemporaryDirectory(prefix="bench-gate-catalog-") as tmp:
        catalog = Catalog(f"sqlite:///{tmp}/catalog.db")
        for key in keys[:WARM_UP]:
            _cell(catalog, "up", key, "warm-up")
            _cell(catalog, "down", key, "warm-up", "up")
        started = time.process_time()
        for key in keys[WARM_UP:]:
            _cell(catalog, "up", key, "timed")
            _cell(catalog, "down", key, "timed", "up")
        cpu = time.process_time() - started
        catalog.engine.dispose()
        catalog.reader.dispose()
    timed = 2 * (len(keys) - WARM_UP)
    return {"cells": timed, "cpu_ms_per_cell": round(cpu / timed * 1000, 3)}


if __name__ == "__main__":
    print(json.dumps(run(*(int(a) for a in sys.argv[1:]))))
