"""``request show ID --cell ASSET/PARTITION``: every try of one cell, across all requests and production."""

from __future__ import annotations

import click

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.service import Try

from .app import AppContext, emit

CELL_FORMAT = "ASSET/PARTITION, e.g. daily_revenue/2022-10-17 (or berlin/daily_usage/2024-03-31)"
THIS_REQUEST_MARK = "»"


def parse_cell(text: str) -> tuple[str, str]:
    """(asset, partition) as the text names them, or a one-line error; the service checks both."""
    asset, slash, partition = text.rpartition("/")  # an asset's key may hold "/" itself (a key prefix)
    if not slash or not asset or not partition:
        raise InvalidInput(f"--cell {text[:80]!r} must be {CELL_FORMAT}")
    return asset, partition


def show_cell_tries(app: AppContext, request_id: str, text: str, as_json: bool) -> None:
    asset, partition = parse_cell(text)
    seen = app.service().cell_tries(request_id, asset, partition)

    def human() -> None:
        note = "" if seen.in_request else f" (not a cell of {request_id})"
        click.echo(
            f"{asset} {partition}: {len(seen.tries)} try(ies) across every request and production; "
            f"{THIS_REQUEST_MARK} = {request_id}{note}"
        )
        for number, t in enumerate(seen.tries, start=1):
            for line in _try_lines(number, t):
                click.echo(line)

    emit(seen.as_dict(), as_json, human)


def _try_lines(number: int, t: Try) -> list[str]:
    mark = THIS_REQUEST_MARK if t.this_request else " "
    who = (
        f"request {t.request_id} by {t.requested_by or '-'}: {t.request_reason or '-'}"
        if t.request_id else "no request"
    )
    if not t.version_written:
        # A ledger's run has the request's decision for the cell; any other run only Dagster's status.
        outcome = t.decision or f"Dagster {t.run_status}"
        return [
            f"{mark} {number}. no version written  {outcome}  lane {t.lane}  {who}",
            f"      dagster run {t.dagster_run_id}  requested {t.requested_at or '-'}",
            *([f"      {t.error}"] if t.error else []),
        ]
    lines = [
        f"{mark} {number}. {t.version_id}  {t.state}  lane {t.lane or '-'}  {who}",
        f"      run {t.logical_run_id}  dagster run {t.dagster_run_id} ({t.run_status or '-'})"
        f"  attempt {t.attempt_no}"
        f"  worker {t.worker or '-'}  code {t.code_version}",
        f"      requested {t.requested_at or '-'}  started {t.started_at or '-'}  ended {t.ended_at or '-'}"
        f"  published {t.published_at or '-'}",
    ]
    if t.checks:
        verdicts = (f"{c.name}={'pass' if c.passed else 'FAIL'}" for c in t.checks)
        lines.append("      checks: " + ", ".join(verdicts))
    if t.error:
        lines.append(f"      error: {t.error}")
    lines += [f"      override: {o.action} by {o.decided_by} at {o.at}: {o.reason}" for o in t.overrides]
    return lines
