"""``backfill-assets request pause`` and ``request resume`` (Airflow's pause/unpause of a backfill)."""

from __future__ import annotations

import click

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.pauses import Pauses, pause_message
from backfill_assets.engine.store.wakeup import wake_daemon

from .app import AppContext, default_user, emit, json_option
from .request_commands import request


@request.command("pause")
@click.argument("request_id")
@click.option("--reason", default="", help="Why it is paused (shown by list, show and reconcile).")
@click.option("--by", "by", default=None, help="Who pauses it (default: the OS user).")
@json_option
@click.pass_obj
def pause(app: AppContext, request_id: str, reason: str, by: str | None, as_json: bool) -> None:
    """Stop submitting runs; the runs in flight finish and are recorded. The plan stays frozen, the claims held.

    A paused request never closes, even with every cell done. Pausing a paused request changes nothing (its first
    pause's who, when and why stand). An adopted Dagster backfill (dg-…) cannot be paused: cancel it.

    Example: backfill-assets request pause req-20221101-1a2b3c4d --reason "warehouse maintenance"
    """
    catalog = app.catalog()
    paused, already = Pauses(catalog).pause(request_id, by or default_user(), reason)
    in_flight = sum(1 for c in Ledger(catalog).cells(request_id) if c.decision == M.SUBMITTED)
    payload = {"request_id": request_id, "status": M.PAUSED, "already_paused": already, "pause": paused,
               "in_flight": in_flight}
    verb = "already paused" if already else f"paused (was {paused['status_before']})"
    emit(payload, as_json,
         f"{request_id} {verb}: {pause_message(paused)}\n  {in_flight} cell(s) in flight finish and are recorded; "
         f"`backfill-assets request resume {request_id}` goes on")


@request.command("resume")
@click.argument("request_id")
@click.option("--by", "by", default=None, help="Who resumes it (default: the OS user).")
@json_option
@click.pass_obj
def resume(app: AppContext, request_id: str, by: str | None, as_json: bool) -> None:
    """Go on where a paused request stopped: it gets back the status it had (open, waiting, blocked).

    Example: backfill-assets request resume req-20221101-1a2b3c4d
    """
    resumed = Pauses(app.catalog()).resume(request_id, by or default_user())
    wake_daemon(app.home)
    status = Ledger(app.catalog()).get(request_id).status
    payload = {"request_id": request_id, "status": status, "pause": resumed}
    emit(payload, as_json,
         f"resumed {request_id} ({status}) by {resumed['resumed_by']} at {resumed['resumed_at']}; "
         f"it was {pause_message(resumed)}")
