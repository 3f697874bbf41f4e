"""Is a trial of ``bench/distributed.py`` right? A fast wrong run must never count as throughput.

A trial counts only when its request closed COMPLETED, every cell of it has exactly one PUBLISHED version of the
request and that version is the one the catalog serves, every published version was written on one of the
trial's Celery workers, and ``backfill-assets reconcile --verify-files`` (every published object's sha256 read
back from S3) reports the request complete with no duplicate publish and no gap. The daily revenue read back
(verified) from the published versions is recorded, so that every trial of a run can be compared.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import versions
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.examples.orders.domain import DAILY_REVENUE

from .distributed_stack import Stack

RECONCILE_TIMEOUT_S = 300


def reconcile(stack: Stack, request_id: str) -> dict:
    """``backfill-assets reconcile ID --verify-files --json`` as an operator runs it, on the trial's stack."""
    argv = [dagster_bin("backfill-assets"), "reconcile", request_id, "--verify-files", "--json"]
    proc = subprocess.run(argv, env=stack.env, cwd=stack.root, capture_output=True, text=True,
                          timeout=RECONCILE_TIMEOUT_S)
    if proc.returncode != 0:
        return {"complete": False, "error": (proc.stderr or proc.stdout)[-2000:]}
    report = json.loads(proc.stdout)
    return {"complete": report["complete"], "totals": report["totals"]}


def revenue(catalog: Catalog, warehouse: Warehouse, keys: list[str]) -> dict:
    """Days, orders and revenue of the published daily_revenue, each version read back with its sha256 checked
    (needs the S3 variables in this process)."""
    current = catalog.current_many(DAILY_REVENUE, keys)
    orders, cny = 0, 0.0
    for version in current.values():
        frame = warehouse.read_verified(version.path, version.sha256, version.rows)
        orders += int(frame["orders"].sum())
        cny += float(frame["revenue_cny"].sum())
    return {"days": len(current), "missing_days": len(keys) - len(current), "orders": orders,
            "revenue_cny": round(cny, 2)}


def check_trial(stack: Stack, request_id: str, assets: tuple[str, ...], keys: list[str]) -> dict:
    """What the trial published, by whom, and every problem found (``ok`` only when there is none)."""
    catalog = Catalog(stack.catalog_url)
    status = Ledger(catalog).get(request_id).status
    mine = catalog.versions_where(versions.c.request_id == request_id)
    published = [v for v in mine if v.state == VersionState.PUBLISHED.value]
    expected = {(a, k) for a in assets for k in keys}
    per_cell = Counter((v.asset, v.partition_key) for v in published)
    serving = {a: catalog.current_many(a, keys) for a in assets}
    not_served = [v.version_id for v in published
                  if serving[v.asset].get(v.partition_key) is None
                  or serving[v.asset][v.partition_key].version_id != v.version_id]
    off_workers = sorted({str(v.worker) for v in published} - set(stack.worker_names))
    rec = reconcile(stack, request_id)
    totals = rec.get("totals", {})
    problems = []
    if status != M.COMPLETED:
        problems.append(f"request {status}, not {M.COMPLETED}")
    if missing := sorted(expected - set(per_cell)):
        problems.append(f"{len(missing)} cell(s) never published, e.g. {missing[:3]}")
    if twice := sorted(c for c, n in per_cell.items() if n > 1):
        problems.append(f"{len(twice)} cell(s) published more than once, e.g. {twice[:3]}")
    if extra := sorted(set(per_cell) - expected):
        problems.append(f"{len(extra)} cell(s) outside the request published, e.g. {extra[:3]}")
    if not_served:
        problems.append(f"{len(not_served)} published version(s) not served by the catalog")
    if off_workers:
        problems.append(f"versions written outside the trial's Celery workers: {off_workers}")
    if not rec["complete"] or (totals.get("published"), totals.get("duplicate_publishes"), totals.get("gaps")) != (
        len(expected), 0, 0
    ):
        problems.append(f"reconcile not exact: {rec}")
    return {
        "ok": not problems,
        "problems": problems,
        "status": status,
        "cells": len(expected),
        "published": len(published),
        "attempts": len(mine),
        "cells_per_worker": dict(sorted(Counter(str(v.worker) for v in published).items())),
        "reconcile": rec,
        "revenue": revenue(catalog, Warehouse(stack.warehouse), keys),
    }
