"""``backfill-assets request pause`` and ``request resume`` (Airflow's pause/unpause of a backfill)."""

from __future__ import annotations

import click

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
    outcome = app.service().pause(request_id, by or default_user(), reason)
    verb = "already paused" if outcome.already_paused else f"paused (was {outcome.pause.status_before})"
    emit(outcome.as_dict(), as_json,
         f"{request_id} {verb}: {outcome.pause.message}\n  {outcome.in_flight} cell(s) in flight finish and "
         f"are recorded; `backfill-assets request resume {request_id}` goes on")


@request.command("resume")
@click.argument("request_id")
@click.option("--by", "by", default=None, help="Who resumes it (default: the OS user).")
@json_option
@click.pass_obj
def resume(app: AppContext, request_id: str, by: str | None, as_json: bool) -> None:
    """Go on where a paused request stopped: it gets back the status it had (open, waiting, blocked).

    Example: backfill-assets request resume req-20221101-1a2b3c4d
    """
    outcome = app.service().resume(request_id, by or default_user())
    resumed = outcome.pause
    emit(outcome.as_dict(), as_json,
         f"resumed {request_id} ({outcome.status}) by {resumed.resumed_by} at {resumed.resumed_at}; "
         f"it was {resumed.message}")
