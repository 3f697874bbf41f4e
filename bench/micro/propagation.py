"""The propagation sensor's work over 10,000 new publish_log rows (a cascade request on raw_orders).

``propagate_once`` reads at most ``BATCH`` (1,000) rows per evaluation, so both are reported: one evaluation,
and the evaluations needed to consume all 10,000 rows (cascading 10,000 order_facts cells).
"""

from __future__ import annotations

import time

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.integration.sensors.propagation import BATCH, propagate_once

from ..orders import GRAPH
from ..pg import temporary_database
from ..workspace import Workspace
from . import synth

EVENTS = 10_000
REQUEST_ID = "req-20260101-ca5cade0"


def _measure(url: str) -> dict:
    catalog = Catalog(url)
    synth.publish_events(catalog, REQUEST_ID, "raw_orders", EVENTS)
    evaluations, cascaded = [], 0
    while True:
        began = time.perf_counter()
        stats = propagate_once(GRAPH, catalog)
        evaluations.append(time.perf_counter() - began)
        cascaded += stats["cascaded"]
        if stats["rows"] == 0:
            break
    return {"events": EVENTS, "batch": BATCH, "evaluations": len(evaluations), "cascaded_cells": cascaded,
            "first_evaluation_s": round(evaluations[0], 3), "all_events_s": round(sum(evaluations), 3),
            "target_s": 2.0}


def run(pg_url: str, ws: Workspace) -> dict:
    out = {"sqlite": _measure(f"sqlite:///{ws.dir('micro') / 'propagation.db'}")}
    with temporary_database(pg_url, "bench_propagation") as url:
        out["postgresql"] = _measure(url)
        dispose_all()
    return out
