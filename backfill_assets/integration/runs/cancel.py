"""``request cancel``: terminate a cancelled request's queued and running runs and close its submitted cells.

Bounded and total: a run whose code server does not answer the termination request within
``TERMINATE_TIMEOUT_SECONDS`` (hung, overloaded, stopped, gone) is marked cancelled in Dagster's run storage, as
Dagster's own "force termination" does, instead of the command waiting on gRPC's own timeout and then crashing
half-way. Idempotent: cancelling a cancelled request again (or after a cancel that died half-way) stops whatever
is left and settles the cells still ``submitted``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Iterable

import dagster as dg

from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.plan.cancelling import StoppedRuns, cancelled_cell
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.integration.runs.runs import IN_FLIGHT_STATUSES, run_view, run_views_by_key, runs_of_request

# A cell the driver recorded as submitted gets its run when the sensor tick that submitted it ends: wait that
# long for it, so that a run created just after the cancel is terminated too.
RUN_APPEAR_TIMEOUT_SECONDS = 15.0
# How long to keep stopping runs until none of the request's runs is queued or running.
STOP_TIMEOUT_SECONDS = 45.0
# A run stays stopped this long before we trust it: Dagster can re-enqueue a run cancelled at the moment it is
# being submitted, and dequeue one cancelled at the moment it is being launched.
QUIET_SECONDS = 1.5
# A run still NOT_STARTED (never submitted to the queue) or CANCELING (termination not confirmed) after this
# long is recorded as cancelled directly: its sensor tick died, or its run worker never confirmed.
STUCK_SECONDS = 10.0
POLL_SECONDS = 0.25
# How long a run's code server gets to answer the termination request (a gRPC call whose own timeout is 60 s,
# and 20 s to connect). A healthy server answers in milliseconds: it only sets an event for the run worker.
TERMINATE_TIMEOUT_SECONDS = 5.0
# A QUEUED run is cancelled by the run coordinator in Dagster's storage alone, with no code server to wait for:
# under a heavily loaded machine that write alone could outlast the code servers' deadline and a queued run was
# misreported as forced. It gets the storage's own time, still bounded (the run may be dequeued meanwhile, and its
# code server then asked after all).
QUEUED_CANCEL_TIMEOUT_SECONDS = 30.0

FORCED_MESSAGE = (
    "Backfill request cancelled: {why}, so the run was marked canceled without its run worker's confirmation "
    "(as Dagster's force termination does). Its worker may still be running; it cannot publish."
)

# Dagster's own force termination (the UI's "force termination", dagster-graphql's ``_force_mark_as_canceled``).
DAGSTER_FORCED_MESSAGE = "forcibly marked as canceled"


@dataclass
class CancelOutcome:
    terminated: list[str]  # stopped by the queue or by their launcher (code server, warm launcher), which confirmed
    forced: list[str]  # marked cancelled by us: no answer from their code server (or no confirmation)


def terminate_request_runs(
    instance: dg.DagsterInstance,
    catalog: Catalog,
    request_id: str,
    submitted: list[Cell],
    appear_timeout: float = RUN_APPEAR_TIMEOUT_SECONDS,
    stop_timeout: float = STOP_TIMEOUT_SECONDS,
    terminate_timeout: float = TERMINATE_TIMEOUT_SECONDS,
    side_effects: frozenset[str] = frozenset(),
) -> CancelOutcome:
    """Stop every queued or running run of the (already cancelled) request (``side_effects``: the graph's
    side-effect assets, whose successful run is their delivery).

    Each submitted cell then ends as ``cancelled_cell`` decides: ``cancelled`` when its run was stopped (or never
    created), or with the outcome of its run when that run finished before the cancel reached it.
    """
    deadline = time.monotonic() + appear_timeout
    wanted = {c.run_key for c in submitted if c.run_key}
    runs = runs_of_request(instance, request_id)
    while wanted - set(run_views_by_key(runs)) and time.monotonic() < deadline:
        time.sleep(POLL_SECONDS)
        runs = runs_of_request(instance, request_id)

    stopped = _stop_runs(instance, request_id, stop_timeout, terminate_timeout)
    runs = runs_of_request(instance, request_id)
    views = run_views_by_key(runs)
    by_id = {r.run_id: run_view(r) for r in runs}
    states: dict[tuple[str, str, str], str] = {}
    if runs:
        for v in catalog.versions_of_dagster_runs([r.run_id for r in runs]):
            states[(v.asset, v.partition_key, v.dagster_run_id)] = v.state
    updates = []
    for cell in submitted:
        # Adopted cells have no run key of ours, only the run Dagster's backfill daemon launched for them.
        run = views.get(cell.run_key or "") or by_id.get(cell.dagster_run_id or "")
        state = states.get((cell.asset, cell.partition_key, run.run_id)) if run else None
        updates.append(cancelled_cell(cell, run, state, stopped, cell.asset in side_effects))
    Ledger(catalog).update_cells(request_id, updates)
    # Stopped: CANCELED, or FAILURE when the interrupt reached a worker that had not seen the termination request
    # (``cancelled_cell``); a run that ended SUCCESS had finished on its own.
    stopped_statuses = (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.FAILURE)
    ended_stopped = {r.run_id for r in runs if r.status in stopped_statuses}
    return CancelOutcome(
        terminated=[r.run_id for r in runs
                    if r.run_id in stopped.ids and r.run_id not in stopped.forced and r.run_id in ended_stopped],
        forced=[r.run_id for r in runs if r.run_id in stopped.forced],
    )


def _stop_runs(
    instance: dg.DagsterInstance, request_id: str, stop_timeout: float, terminate_timeout: float
) -> StoppedRuns:
    """Keep stopping the request's queued and running runs until none is left (and stays so for QUIET_SECONDS)
    or ``stop_timeout`` passes."""
    acted: set[str] = set()
    forced: dict[str, str] = {}  # run id -> why it was marked cancelled without its worker's confirmation
    # Runs this call asked to terminate. Once asked, a CANCELING run is waiting for its worker's confirmation:
    # asking again would only repeat the request. A CANCELING run nobody here asked (a cancel that died
    # half-way, a terminate from the UI) is asked once: its worker may never have been told.
    asked: set[str] = set()
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
        to_ask = []
        for run in active:
            age = now - first_seen.setdefault((run.run_id, run.status.value), now)
            waiting = run.status == dg.DagsterRunStatus.NOT_STARTED or (
                run.status == dg.DagsterRunStatus.CANCELING and run.run_id in asked
            )
            if not waiting:
                to_ask.append(run)
            elif age >= STUCK_SECONDS:
                # Being submitted to the queue, or terminating, for too long: its sensor tick died, or its
                # worker will never confirm.
                forced[run.run_id] = f"it was still {run.status.value} after {STUCK_SECONDS:g} s"
                force_cancel(instance, run.run_id, forced[run.run_id])
        answers = _ask_to_cancel(instance, {
            r.run_id: max(terminate_timeout, QUEUED_CANCEL_TIMEOUT_SECONDS)
            if r.status == dg.DagsterRunStatus.QUEUED else terminate_timeout
            for r in to_ask
        })
        asked.update(answers)
        for run_id, (answered, error) in answers.items():
            if answered:
                acted.add(run_id)
            elif error is not None:
                forced[run_id] = error
                force_cancel(instance, run_id, error)
            # Answered False: nothing to cancel yet (a launch in progress); the next round gets it.
        acted.update(forced)
        time.sleep(POLL_SECONDS)
    # A run asked while its launch was still in progress answers False, yet Dagster has already marked it
    # CANCELING: its worker then starts, sees the pending termination and ends it CANCELED. That is our stop too.
    acted.update(r.run_id for r in runs_of_request(instance, request_id)
                 if r.run_id in asked and r.status == dg.DagsterRunStatus.CANCELED)
    return StoppedRuns(ids=frozenset(acted), forced=forced)


def _ask_to_cancel(
    instance: dg.DagsterInstance, timeouts: dict[str, float]
) -> dict[str, tuple[bool, str | None]]:
    """Ask Dagster to cancel each run of ``timeouts`` — a queued run leaves the queue; a launched one is
    terminated by its code server over gRPC — all at once, waiting for each at most its timeout from the start.
    Returns, per run, whether a cancellation was issued and, when the call raised or did not return in time, why
    (a phrase about the run).

    Each call runs in a daemon thread: a gRPC call to a hung code server cannot be interrupted and would hold the
    command for gRPC's own timeout (20 s to connect, 60 s to answer) and then raise; a daemon thread left blocked
    in it does not keep the CLI process alive once the command is done. A late call writes nothing more: Dagster's
    launcher reports the run CANCELING before it calls the server (should that report come after we marked the
    run cancelled, the run is CANCELING again and is marked cancelled once more when stuck). If the server
    recovers while the call is still pending, it interrupts the run worker: all the better.
    """
    answers: dict[str, tuple[bool, str | None]] = {}
    # The instance creates both lazily: once, here, rather than racing to in the threads.
    coordinator, _ = instance.run_coordinator, instance.run_launcher

    def ask(run_id: str) -> None:
        try:
            answers[run_id] = (bool(coordinator.cancel_run(run_id)), None)
        except Exception as exc:  # noqa: BLE001 - a failed call (unreachable server, its error) forces the run
            first_line = (str(exc).splitlines() or [""])[0]
            answers[run_id] = (False, f"its termination request failed ({type(exc).__name__}: {first_line})")

    threads = {
        run_id: threading.Thread(target=ask, args=(run_id,), name=f"cancel-{run_id[:8]}", daemon=True)
        for run_id in timeouts
    }
    for thread in threads.values():
        thread.start()
    started = time.monotonic()
    for run_id, thread in threads.items():
        thread.join(max(0.0, started + timeouts[run_id] - time.monotonic()))

    def no_answer(run_id: str) -> str:
        return f"its code server did not answer the termination request within {timeouts[run_id]:g} s"

    return {run_id: answers.get(run_id, (False, no_answer(run_id))) for run_id in timeouts}


def force_cancel(instance: dg.DagsterInstance, run_id: str, why: str) -> None:
    """Mark the run cancelled in Dagster's run storage, as the UI's force termination does (dagster-graphql's
    ``_force_mark_as_canceled``): the run counts as finished, frees its queue slots, and its step refuses to
    publish should its worker still be running (``gated.py`` re-reads the run's status before publishing)."""
    run = instance.get_run_by_id(run_id)
    if run is not None and not run.is_finished:
        instance.report_run_canceled(run, message=FORCED_MESSAGE.format(why=why))


def forced_cancels(instance: dg.DagsterInstance, runs: Iterable[dg.DagsterRun]) -> frozenset[str]:
    """The runs of ``runs`` that were marked cancelled without their worker's confirmation: their cancellation is
    ours (``FORCED_MESSAGE``) or Dagster's force termination, or Dagster ended them FAILURE after it (their worker's
    job failure came after the mark; a confirmed cancellation ends CANCELED). One query per run given: give only
    CANCELED runs and the FAILURE runs of cancelled cells."""
    forced = set()
    ours = FORCED_MESSAGE.split("{why}")[0]
    for run in runs:
        records = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.RUN_CANCELED, limit=5).records
        messages = [r.event_log_entry.message or "" for r in records]
        if messages and (
            run.status == dg.DagsterRunStatus.FAILURE
            or any(m.startswith(ours) or DAGSTER_FORCED_MESSAGE in m for m in messages)
        ):
            forced.add(run.run_id)
    return frozenset(forced)
