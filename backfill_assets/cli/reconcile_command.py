"""``backfill-assets reconcile ID``: the request-level manifest as a table, JSON or a self-contained HTML page."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import jinja2
from rich.console import Console

from backfill_assets.service.reconciling import Repair, TableNotSynced, TableSynced
from backfill_assets.service.vocabulary import CellReport, Handoff, Report, ReportRequest

from .app import AppContext, cli, emit, json_option

TEMPLATES = Path(__file__).parent / "templates"


def render_html(report: Report) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, undefined=jinja2.StrictUndefined
    )
    data = json.loads(json.dumps(report.as_dict(), default=str))
    days = sorted({c["partition_key"] for c in data["cells"]})
    assets = list(dict.fromkeys(c["asset"] for c in data["cells"]))
    grid = {(c["asset"], c["partition_key"]): c for c in data["cells"]}
    return env.get_template("reconcile.html.j2").render(r=data, days=days, assets=assets, grid=grid)


TOTALS_SHOWN = (
    "planned", "cascaded", "handed_off", "runs_created", "attempts", "published", "rolled_back", "rejected",
    "failed", "skipped", "cancelled", "pending", "in_flight", "still_retrying", "duplicate_publishes", "gaps",
    "accepted", "rejected_after_publish", "marked_skipped",
)


def _cell_line(cell: CellReport) -> list[str]:
    last = cell.versions[-1] if cell.versions else None
    parts = [cell.partition_key, cell.asset, cell.decision]
    if cell.run_reads_as:
        # Dagster shows FAILURE for a run marked cancelled whose worker failed afterwards: say what happened.
        parts[2] = cell.run_reads_as
        parts.append(f"[Dagster: {cell.run_status}]")
    if cell.origin != "planned":
        parts.append(f"({cell.origin})")
    if cell.override:
        override = cell.override
        parts.append(f"[override: {override.action} by {_as_seen(override.decided_by, override.system_user)}]")
    if cell.versions:
        parts.append("versions " + " ".join(f"{v.attempt_no}:{v.state}" for v in cell.versions))
    if last is not None and last.rows is not None:
        parts.append(f"rows {last.rows}")
    if last is not None and last.change:
        parts.append(f"change {json.dumps(last.change)}")
    config = (last.params or {}).get("config") if last is not None else None
    if config:
        parts.append(f"conf {json.dumps(config, sort_keys=True)}")
    if last is not None and last.recomputed_on_current_upstream is not None:
        parts.append(f"recomputed on current upstream: {last.recomputed_on_current_upstream}")
    note = (cell.reason or "") + ("; " + last.gap if last is not None and last.gap else "")
    if note:
        parts.append(f"— {note}")
    return parts


def _as_seen(stated: str | None, seen: str | None) -> str:
    """A stated name, with who the system saw when it differs (``ana (as alice)``): names are claims."""
    return f"{stated} (as {seen})" if seen and seen != stated else str(stated)


def _who_line(request: ReportRequest) -> str | None:
    spec = request.spec
    if not spec.system_user:
        return None  # a request from before the system user was recorded
    approved = f"; side effects approved by {spec.approved_by}" if spec.approved_by else ""
    return f"requested by {spec.requested_by}{approved}; system user {spec.system_user}"


def _handoff_line(h: Handoff) -> str:
    decided = f" by {_as_seen(h.decided_by, h.system_user)}" if h.decided_by else ""
    return f"handoff {h.handoff_id} {h.asset} → {h.owner}: {h.status} (deadline {h.deadline}){decided}"


def _repair_line(repair: Repair) -> str:
    if isinstance(repair, TableSynced):
        return (f"repaired table {repair.sync.table}: {len(repair.sync.days)} day(s) switched, publish log seq "
                f"{repair.sync.seq}")
    if isinstance(repair, TableNotSynced):
        return f"table {repair.table} still behind: {repair.error}"
    return f"repaired {repair.version_id}: {repair.action}"


def print_report(report: Report) -> None:
    console = Console()
    t = report.totals.as_dict()
    request = report.request
    console.print(
        f"[bold]{request.request_id}[/bold] {request.status} — complete: "
        + ("[green]yes[/green]" if report.complete else "[red]no[/red]")
    )
    if request.pause:
        console.print(
            f"{request.pause.message} — `backfill-assets request resume {request.request_id}` goes on",
            highlight=False, markup=False,
        )
    who = _who_line(request)
    if who:
        console.print(who, highlight=False, markup=False, soft_wrap=True)
    # Lines, not tables: a cell's versions, change and note are too wide for a table at 80 columns.
    if request.spec.conf:
        console.print(f"conf {json.dumps(request.spec.conf, sort_keys=True)}", highlight=False, markup=False)
    console.print("totals: " + ", ".join(f"{key} {t[key]}" for key in TOTALS_SHOWN), highlight=False)
    console.print(f"cells ({len(report.cells)}):", highlight=False)
    # One line per cell, written as it is (never wrapped: a line is grepped whole), in one write: rich's layout
    # of each line took 2.5 s of a ten-year request's 10,950.
    _echo_lines(["  " + "  ".join(_cell_line(c)) for c in report.cells])
    # As the cells: one write each, the text as it is (a ten-year request's downstream asset is 3,650 stale days).
    _echo_lines([f"{click.style('gap', fg='red')} {gap.version_id} ({gap.state}): {gap.gap}" for gap in report.gaps])
    _echo_lines([f"{click.style('stale', fg='yellow')} {s.asset} {s.partition_key} (current {s.current_version_id})"
                 for s in report.stale_downstream])
    # One line per side-effect asset and status (a month of days would otherwise be a month of lines).
    grouped: dict[tuple[str, str], list[str]] = {}
    for e in report.side_effects:
        grouped.setdefault((e.asset, e.status.value), []).append(e.partition_key)
    for (asset, status), days in grouped.items():
        span = days[0] if len(days) == 1 else f"{min(days)}..{max(days)}"
        console.print(f"side effect {asset}: {status} — {len(days)} day(s), {span}")
    for h in report.handoffs:
        console.print(_handoff_line(h), highlight=False, markup=False)


def _echo_lines(lines: list[str]) -> None:
    """``lines`` in one write, never wrapped (click drops their colours off a terminal)."""
    if lines:
        click.echo("\n".join(lines))


def print_tables(tables) -> None:
    """One line per published table behind the pointers (nothing when every table is in line)."""
    console = Console()
    for lag in tables:
        if lag.error:
            console.print(f"[yellow]table[/yellow] {lag.table}: cannot be read — {lag.error}", highlight=False)
        elif lag.days_behind:
            days = lag.days_behind
            span = days[0] if len(days) == 1 else f"{days[0]}..{days[-1]}"
            console.print(f"[yellow]table behind[/yellow] {lag.table}: {len(days)} day(s) not switched yet ({span}); "
                          "`reconcile --repair` or `backfill-assets tables sync` brings it in line", highlight=False)


@cli.command("reconcile")
@click.argument("request_id")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write a self-contained HTML page (calendar grid, per-cell details).")
@click.option("--repair", is_flag=True, help="Record missing materializations; abandon versions stuck mid-write; "
              "bring published tables that lag in line.")
@click.option("--verify-files", is_flag=True, help="Re-hash every published file of the request and its manifest.")
@json_option
@click.pass_obj
def reconcile_command(
    app: AppContext, request_id: str, html_path: Path | None, repair: bool, verify_files: bool, as_json: bool
) -> None:
    """Planned vs created vs published vs rejected/skipped/cancelled/duplicated/retrying, per cell.

    Exit status: 0 when the request is complete (every cell published or deliberately skipped) and no gap between
    the catalog and Dagster remains (with --repair, the report is made again after the repair); 1 otherwise; 2 on
    bad input (e.g. an unknown request).

    Example: backfill-assets reconcile req-20221101-1a2b3c4d --html reconcile.html
    """
    backfills = app.asking_service()
    reconciled = backfills.reconcile(request_id, verify_files, repair)
    app.remember_location(backfills)  # a reconcile that had to load the code location: the next one reads its snapshot
    report, repaired = reconciled.report, reconciled.repaired
    if html_path is not None:
        html_path.write_text(render_html(report), encoding="utf-8")
    def human() -> None:
        print_report(report)
        print_tables(reconciled.tables)
        for repair in repaired:
            click.echo(_repair_line(repair))
        if html_path is not None:
            click.echo(f"wrote {html_path}")

    # The record as plain data only for --json: at ten years it is ~0.5 s the table never needed.
    emit(reconciled.as_dict() if as_json else None, as_json, human)
    if not reconciled.complete:
        sys.exit(1)
