"""``backfill-assets clear``: Airflow's "clear" (re-run task instances, with upstream/downstream, past/future and
only-failed) as an ordinary frozen request, so reprocess, order, max-active, propagation and reconcile all apply."""

from __future__ import annotations

from dataclasses import replace

import click

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.clearing import clear_window

from .app import AppContext, cli, json_option
from .request_commands import make_request, request_input, request_options


@cli.command("clear")
@click.option("--select", "selection", required=True,
              help="Dagster asset selection: daily_revenue, +daily_revenue (and its parents), order_facts+ (and "
                   "its children), key:raw_orders or key:order_facts, ...")
@click.option("--partition", default=None, help="The day to clear, YYYY-MM-DD (with --past / --future).")
@click.option("--past", is_flag=True, help="Also every earlier day, back to the partitions' first day.")
@click.option("--future", is_flag=True, help="Also every later day, up to the newest complete interval.")
@click.option("--from", "first", default=None, help="Instead of --partition: first day of a range.")
@click.option("--to", "last", default=None, help="Instead of --partition: last day of the range, inclusive.")
@click.option("--only-failed", is_flag=True,
              help="Only cells whose latest attempt was rejected, abandoned or failed; the rest are skipped.")
@click.option("--yes", "confirmed", is_flag=True, help="Create the request. Without it, clear is a dry run.")
@request_options
@json_option
@click.pass_obj
def clear(
    app: AppContext,
    selection: str,
    partition: str | None,
    past: bool,
    future: bool,
    first: str | None,
    last: str | None,
    only_failed: bool,
    confirmed: bool,
    as_json: bool,
    **options,
) -> None:
    """Re-run the selected assets' cells over the chosen days: a dry run first (every cell and why), then
    ``--yes`` creates the request.

    A cleared cell is re-run whatever its state (``--reprocess completed``), except one a queued or running run
    already writes; ``--only-failed`` re-runs only the failed ones (``--reprocess failed``, and a cell that never
    ran is left alone).

    Example: backfill-assets clear --select +daily_revenue --partition 2022-10-17 --future --reason "FX fix"
    """
    from backfill_assets.integration.selection import select_assets

    location = app.code_location()
    graph = location.graph
    assets = select_assets(location.defs, graph, selection)
    window = clear_window(
        graph.calendar, graph.calendar.newest_complete_key(utc_now()), partition=partition, past=past,
        future=future, first=first, last=last,
    )
    reprocess = M.ReprocessPolicy.FAILED if only_failed else M.ReprocessPolicy.COMPLETED
    asked = replace(request_input({**options, "assets": "", "first": window.first, "last": window.last}),
                    assets=list(assets), reprocess=reprocess, only_failed=only_failed)
    described = {"selection": selection, "selected_assets": list(assets), "days_asked": window.asked,
                 "first": window.first, "last": window.last}
    heading = (
        f"clear {selection!r} → {', '.join(assets)}; {window.first}..{window.last} ({window.asked}); "
        f"reprocess {reprocess.value}" + (" (only failed)" if only_failed else "")
    )
    make_request(app, asked, dry_run=not confirmed, as_json=as_json, described=described, heading=heading,
                 hint="run again with --yes to create the request")
