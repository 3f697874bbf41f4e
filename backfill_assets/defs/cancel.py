"""``request cancel``: terminate a cancelled request's queued and running runs and close its submitted cells."""

from __future__ import annotations

import time

import dagster as dg

from backfill_assets.core import request_model as M
from backfill_assets.core.catalog import Catalog
from backfill_assets.core.driver_tick import settle
from backfill_assets.core.ledger import Ledger
from backfill_assets.core.schema import versions

from .runs import IN_FLIGHT_STATUSES, run_view, run_views_by_key, runs_of_request

# A cell the driver recorded as submitted gets its run when the sensor tick that submitted it ends: wait that
# long for it, so that a run created just after the cancel is terminated too.
RUN_APPEAR_TIMEOUT_SECONDS = 15.0
# How long to keep stopping runs until none of the request's runs is queued or running.
STOP_TIMEOUT_SECONDS = 45.0
# A run stays stopped this long before we trust it: Dagster can re-enqueue a run cancelled at the moment it is
# being submitted, and dequeue one cancelled at the moment it is being launched.
QUIET_SECONDS = 1.5
# A run still NOT_STARTED (never submitted to the queue) or CANCELING (termination not confirmed) after this
# long is recorded as cancelled directly: its sensor tick died, or its code server cannot be reached.
STUCK_SECONDS = 10.0
POLL_SECONDS = 0.25


def terminate_request_runs(
    instance: dg.DagsterInstance,
    catalog: Catalog,
    request_id: str,
    submitted: list[dict],
    appear_timeout: float = RUN_APPEAR_TIMEOUT_SECONDS,
    stop_timeout: float = STOP_TIMEOUT_SECONDS,
) -> list[str]:
    """Stop every queued or running run of the (already cancelled) request; returns the runs it cancelled.

    Each submitted cell then ends ``cancelled`` when its run was stopped (or never created), or with the outcome
    of its run when that run finished before the cancel reached it.
    """
    deadline = time.monotonic() + appear_timeout
    wanted = {c["run_key"] for c in submitted if c.get("run_key")}
    runs = runs_of_request(instance, request_id)
    while wanted - set(run_views_by_key(runs)) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        runs = runs_of_request(instance, request_id)

    acted: set[str] = set()
    first_seen: dict[tuple[str, str], float] = {}
    quiet_since: float | None = None
    deadline = time.monotonic() + stop_timeout
    while time.monotonic() < deadline:
        now = time.monotonic()
        active = [r for r in runs_of_request(instance, request_id) if r.status in IN_FLIGHT_STATUSES]
        if not active:
            quiet_since = quiet_since or now
            if not acted or now - quiet_since >= QUIET_SECONDS:
                break
        else:
            quiet_since = None
        for run in active:
            age = now - first_seen.setdefault((run.run_id, run.status.value), now)
            if _stop(instance, run, stuck=age >= STUCK_SECONDS):
                acted.add(run.run_id)
        time.sleep(POLL_SECONDS)

    runs = runs_of_request(instance, request_id)
    views = run_views_by_key(runs)
    by_id = {r.run_id: run_view(r) for r in runs}
    states: dict[tuple[str, str, str], str] = {}
    if runs:
        for v in catalog.versions_where(versions.c.dagster_run_id.in_([r.run_id for r in runs])):
            states[(v.asset, v.partition_key, v.dagster_run_id)] = v.state
    updates = []
    for cell in submitted:
        # Adopted cells have no run key of ours, only the run Dagster's backfill daemon launched for them.
        run = views.get(cell.get("run_key")) or by_id.get(cell.get("run_id"))
        outcome = settle(cell, run, states.get((cell["asset"], cell["partition_key"], run.run_id))) if run else None
        if outcome is None:
            reason = "request cancelled before its run was created" if run is None else "run still stopping"
            outcome = {"decision": M.CELL_CANCELLED, "reason": reason, "run_id": run.run_id if run else None}
        elif outcome["decision"] == M.CELL_CANCELLED:
            outcome["reason"] = "run terminated: request cancelled"
        updates.append({"asset": cell["asset"], "partition_key": cell["partition_key"], **outcome})
    Ledger(catalog).update_cells(request_id, updates)
    return [r.run_id for r in runs if r.run_id in acted and r.status == dg.DagsterRunStatus.CANCELED]


def _stop(instance: dg.DagsterInstance, run: dg.DagsterRun, stuck: bool) -> bool:
    """One attempt at stopping a run; returns whether a cancellation was issued."""
    status = run.status
    if status in (dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.CANCELING):
        # Being submitted to the queue right now, or already terminating: wait, unless it is stuck there.
        if stuck:
            instance.report_run_canceled(run, message="backfill request cancelled")
            return True
        return False
    # Queued: removed from the queue. Launched: its code server terminates the run worker. False while the
    # launch is still in progress; the next attempt gets it.
    return instance.run_coordinator.cancel_run(run.run_id)
