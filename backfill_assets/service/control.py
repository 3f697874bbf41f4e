"""A request's life cycle: cancel, pause, resume (``Backfills``' operations that stop or restart its runs)."""

from __future__ import annotations

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.store.pauses import Pauses

from .context import ServiceContext
from .records import Cancelled, Paused, Resumed


def cancel(service: ServiceContext, request_id: str, terminate_timeout: float | None) -> Cancelled:
    ledger = Ledger(service.catalog)
    record = ledger.get(validate_request_id(request_id))
    dagster = service.require_dagster("cancel (stopping the request's runs)")
    adopted = record.source == M.RequestSource.DAGSTER
    backfill_id = request_id.removeprefix(T.ADOPTED_PREFIX)
    # Adopted: Dagster's backfill daemon launches its runs, so the backfill itself is cancelled first.
    dagster_backfill = dagster.cancel_backfill(backfill_id) if adopted else None
    # The close and its trail row commit together; stopping the runs (Dagster, seconds) comes after the commit.
    with service.atomic():
        submitted, already = close_request(ledger, request_id)
        service.record("cancel", request_id, f"{'already cancelled' if already else 'cancelled'}; "
                       f"{len(submitted)} cell(s) in flight to stop", request_id)
    stopped = dagster.stop_request_runs(service.catalog, request_id, submitted,
                                        frozenset(service.graph.side_effect_assets), terminate_timeout)
    if adopted:
        # Read again once its runs are stopped: the backfill daemon's iteration that sees them cancelled may have
        # completed the backfill over our CANCELING (Dagster's completion does not check for a pending cancel);
        # a backfill still active is asked again. Either way it launches nothing more.
        dagster_backfill = dagster.cancel_backfill(backfill_id) or dagster_backfill
    return Cancelled(request_id, already, stopped.terminated, stopped.forced, adopted, dagster_backfill)


def close_request(ledger: Ledger, request_id: str) -> tuple[list[Cell], bool]:
    """Stop submission: close the request. Returns its cells still ``submitted`` (their runs to stop) and whether
    it had already been cancelled — a second cancel, or one after a cancel that died half-way, which must still
    finish the job rather than fail. A request that completed stays an error (``InvalidInput``)."""
    if ledger.get(request_id).status != M.CANCELLED:
        try:
            return ledger.cancel(request_id), False
        except InvalidInput:
            if ledger.get(request_id).status != M.CANCELLED:  # completed in between: nothing to cancel
                raise
            # Another cancel closed it in between: carry on, like a second cancel.
    return [c for c in ledger.cells(request_id) if c.decision == M.SUBMITTED], True


def pause(service: ServiceContext, request_id: str, by: str, reason: str) -> Paused:
    by = service.person(by, "by")
    with service.atomic():
        paused, already = Pauses(service.catalog).pause(request_id, by, reason)
        in_flight = sum(1 for c in Ledger(service.catalog).cells(request_id) if c.decision == M.SUBMITTED)
        service.record("pause", request_id, "already paused" if already else
                       f"paused (was {paused.status_before}); {in_flight} cell(s) in flight", request_id, reason, by)
    return Paused(request_id, already, paused, in_flight)


def resume(service: ServiceContext, request_id: str, by: str) -> Resumed:
    by = service.person(by, "by")
    with service.atomic():
        resumed = Pauses(service.catalog).resume(request_id, by)
        status = M.RequestStatus(Ledger(service.catalog).get(request_id).status)
        service.record("resume", request_id, f"resumed ({status})", request_id, actor=by)
    service.wake()
    return Resumed(request_id, status, resumed)
