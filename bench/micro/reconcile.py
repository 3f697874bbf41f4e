"""Reconcile of a request with 10,000 versions (2 assets x 2,500 days, a rejected and a published version each).

Timed: ``core.reconcile.reconcile`` with the Dagster facts given as plain lookups (every run SUCCESS, every
published version materialized), so the figure is the product's own work over its catalog.
"""

from __future__ import annotations

import time

from backfill_assets.engine.plan.reconcile import reconcile
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.db import dispose_all

from ..orders import GRAPH
from ..pg import temporary_database
from ..workspace import Workspace
from . import synth

ASSETS = ["order_facts", "daily_revenue"]
DAYS = 2500
REQUEST_ID = "req-20260101-5eed5eed"


def _measure(url: str) -> dict:
    catalog = Catalog(url)
    made = synth.request_with_versions(catalog, REQUEST_ID, ASSETS, DAYS)
    began = time.perf_counter()
    report = reconcile(catalog, REQUEST_ID, GRAPH, run_status_of=lambda _run: "SUCCESS",
                       materialized_version_ids=made.published_ids)
    seconds = time.perf_counter() - began
    return {"versions": made.versions, "cells": len(report.cells), "complete": report.complete,
            "gaps": report.totals.gaps, "stale_downstream": len(report.stale_downstream),
            "seconds": round(seconds, 3), "target_s": 2.0}


def run(pg_url: str, ws: Workspace) -> dict:
    out = {"sqlite": _measure(f"sqlite:///{ws.dir('micro') / 'reconcile.db'}")}
    with temporary_database(pg_url, "bench_reconcile") as url:
        out["postgresql"] = _measure(url)
        dispose_all()
    return out
