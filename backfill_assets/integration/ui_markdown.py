"""A request's plan and reconcile report as Markdown, for the Dagster UI (run metadata of the Launchpad's
``backfill_request`` and of ``backfill_report``). Plain text from plain data: no Dagster here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from backfill_assets.engine.plan.reconcile_records import Report

if TYPE_CHECKING:
    from backfill_assets.service import RequestPlan

# The UI renders every row; a year of five assets is 1,825 rows. Beyond this, the tail is counted, not listed.
MAX_ROWS = 400
ALWAYS_SHOWN = ("planned", "published", "rejected", "skipped", "duplicate_publishes", "gaps")


def _cell(value: object) -> str:
    # A reason may hold any text: keep it on one table row.
    return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")


def table(header: Iterable[str], rows: Sequence[Sequence[object]]) -> str:
    names = list(header)
    lines = ["| " + " | ".join(names) + " |", "|" + "---|" * len(names)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"\n… and {len(rows) - MAX_ROWS} more row(s): `backfill-assets reconcile` lists them all.")
    return "\n".join(lines)


def plan_markdown(title: str, plan: RequestPlan, notes: Iterable[str | None] = ()) -> str:
    """A dry run (or the plan of a request just created) as the Launchpad run's Markdown."""
    counts: dict[str, int] = {}
    for cell in plan.cells:
        counts[cell.action] = counts.get(cell.action, 0) + 1
    summary = ", ".join(f"{n} {action}" for action, n in sorted(counts.items())) or "no cells"
    parts = [f"### {title}", f"{len(plan.cells)} cell(s): {summary}.", *[f"> {n}" for n in notes if n]]
    parts.append(table(("day", "asset", "decision", "why"),
                       [[c.partition_key, c.asset, c.action, c.reason] for c in plan.cells]))
    return "\n\n".join(parts)


def report_markdown(report: Report) -> str:
    request = report.request
    totals = report.totals.as_dict()
    # The counts a reader always wants, and any other that is not zero (a table of 16 columns does not fit).
    shown = [
        k for k, v in totals.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and (v or k in ALWAYS_SHOWN)
    ]
    head = (
        f"### Request {request.request_id}: {request.status}"
        f" ({'complete' if report.complete else 'not complete'})"
    )
    spec = request.spec
    policy = (
        f"reprocess **{spec.reprocess}**, order **{spec.order}**, max_active "
        f"**{spec.max_active}**, downstream **{spec.downstream}**, code version "
        f"`{request.record.code_version}`; requested by {spec.requested_by}: {spec.reason or '—'}"
    )
    rows = []
    for cell in report.cells:
        last = cell.versions[-1] if cell.versions else None
        rows.append([
            cell.partition_key,
            cell.asset,
            f"{cell.run_reads_as} (Dagster: {cell.run_status})" if cell.run_reads_as else cell.decision,
            " ".join(f"{v.attempt_no}:{v.state}" for v in cell.versions) or "—",
            last.version_id if last else "—",
            cell.reason or "",
        ])
    message = request.record.message
    parts = [
        head,
        policy + (f"\n\n> {message}" if message else ""),
        table(shown, [[totals[k] for k in shown]]),
        table(("day", "asset", "decision", "attempts", "latest version", "why"), rows),
    ]
    if report.gaps:
        parts.append("**Gaps**\n\n" + table(("version", "state", "gap"), [
            [g.version_id, g.state, g.gap] for g in report.gaps
        ]))
    return "\n\n".join(parts)
