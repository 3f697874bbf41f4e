"""``request cancel``: terminate a cancelled request's queued and running runs and close its submitted cells."""

from __future__ import annotations

import time

import dagster as dg

from backfill_assets.core import request_model as M
from backfill_assets.core.catalog import Catalog
from backfill_assets.core.driver_tick import settle
from backfill_assets.core.ledger import Ledger
from backfill_assets.core.schema import versions

from .runs import IN_FLIGHT_STATUSES, run_views_by_key, runs_of_request

# A cell the driver recorded as submitted gets its run when the sensor tick that submitted it ends: wait that
# long for it, so that a run created just after the cancel is terminated too.
RUN_APPEAR_TIMEOUT_SECONDS = 15.0


def terminate_request_runs(
    instance: dg.DagsterInstance,
    catalog: Catalog,
    request_id: str,
    submitted: list[dict],
    appear_timeout: float = RUN_APPEAR_TIMEOUT_SECONDS,
) -> list[str]:
    """Cancel every queued or running run of the (already cancelled) request; returns the terminated run ids.

    Each cell that was submitted ends ``cancelled`` when its run was stopped (or never created), or with the
    outcome of its run when that run had already finished.
    """
    deadline = time.monotonic() + appear_timeout
    wanted = {c["run_key"] for c in submitted if c.get("run_key")}
    runs = runs_of_request(instance, request_id)
    while wanted - set(run_views_by_key(runs)) and time.monotonic() < deadline:
        time.sleep(0.25)
        runs = runs_of_request(instance, request_id)

    terminated = []
    for run in runs:
        if run.status in IN_FLIGHT_STATUSES and instance.run_coordinator.cancel_run(run.run_id):
            terminated.append(run.run_id)

    runs = runs_of_request(instance, request_id)
    views = run_views_by_key(runs)
    states: dict[tuple[str, str, str], str] = {}
    if runs:
        for v in catalog.versions_where(versions.c.dagster_run_id.in_([r.run_id for r in runs])):
            states[(v.asset, v.partition_key, v.dagster_run_id)] = v.state
    updates = []
    for cell in submitted:
        run = views.get(cell.get("run_key"))
        outcome = None
        if run is not None and run.run_id not in terminated:
            outcome = settle(cell, run, states.get((cell["asset"], cell["partition_key"], run.run_id)))
        if outcome is None:
            reason = "run terminated: request cancelled" if run else "request cancelled before its run was created"
            outcome = {"decision": M.CELL_CANCELLED, "reason": reason, "run_id": run.run_id if run else None}
        updates.append({"asset": cell["asset"], "partition_key": cell["partition_key"], **outcome})
    Ledger(catalog).update_cells(request_id, updates)
    return terminated
