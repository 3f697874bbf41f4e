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

STOP_ATTEMPTS = 6
STOP_RETRY_SECONDS = 0.5

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

    terminated = [run.run_id for run in runs if run.status in IN_FLIGHT_STATUSES and stop_run(instance, run)]

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


def stop_run(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Cancel one run, whatever its stage; returns False only when it had already finished."""
    for _ in range(STOP_ATTEMPTS):
        current = instance.get_run_by_id(run.run_id)
        if current is None or current.is_finished:
            return False
        if current.status == dg.DagsterRunStatus.NOT_STARTED:
            # Created by the sensor but not yet queued: the queue then skips it (and a worker would not start it).
            instance.report_run_canceled(current, message="backfill request cancelled before the run was queued")
            return True
        # Queued: removed from the queue. Launched: its code server terminates the run worker.
        if instance.run_coordinator.cancel_run(current.run_id):
            return True
        time.sleep(STOP_RETRY_SECONDS)  # being launched right now: the code server knows it in a moment
    current = instance.get_run_by_id(run.run_id)
    if current is None or current.is_finished:
        return False
    # Never reachable by its code server: record it cancelled; a run worker that starts later will not execute.
    instance.report_run_canceled(current, message="backfill request cancelled; the run could not be reached")
    return True
