"""A request's life cycle: cancel, pause, resume (``Backfills``' operations that stop or restart its runs)."""

from __future__ import annotations

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.store.pauses import Pauses

from .context import ServiceContext
from .records import Cancelled, Paused, Resumed


def cancel(service: ServiceContext, request_id: str, terminate_timeout: float | None) -> Cancelled:
    from backfill_assets.integration.runs.cancel import close_request, terminate_request_runs
    from backfill_assets.integration.runs.dagster_adapter import cancel_backfill

    ledger = Ledger(service.catalog)
    record = ledger.get(validate_request_id(request_id))
    instance = service.instance_of()
    adopted = record.source == M.RequestSource.DAGSTER
    backfill_id = request_id.removeprefix(T.ADOPTED_PREFIX)
    # Adopted: Dagster's backfill daemon launches its runs, so the backfill itself is cancelled first.
    dagster_backfill = cancel_backfill(instance, backfill_id) if adopted else None
    # The close and its trail row commit together; stopping the runs (Dagster, seconds) comes after the commit.
    with service.atomic():
        submitted, already = close_request(ledger, request_id)
        service.record("cancel", request_id, f"{'already cancelled' if already else 'cancelled'}; "
                       f"{len(submitted)} cell(s) in flight to stop", request_id)
    bounds = {} if terminate_timeout is None else {"terminate_timeout": terminate_timeout}
    outcome = terminate_request_runs(
        instance, service.catalog, request_id, submitted,
        side_effects=frozenset(service.graph.side_effect_assets), **bounds,
    )
    if adopted:
        # Read again once its runs are stopped: the backfill daemon's iteration that sees them cancelled may have
        # completed the backfill over our CANCELING (Dagster's completion does not check for a pending cancel);
        # a backfill still active is asked again. Either way it launches nothing more.
        dagster_backfill = cancel_backfill(instance, backfill_id) or dagster_backfill
    cancelled = Cancelled(request_id, already, tuple(outcome.terminated), tuple(outcome.forced), adopted,
                          dagster_backfill)
    return cancelled


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
