"""``backfill-assets clear``: Airflow's "clear" (re-run task instances, with upstream/downstream, past/future and
only-failed) as an ordinary frozen request, so reprocess, order, max-active, propagation and reconcile all apply."""

from __future__ import annotations

import click

from backfill_assets.engine.model.errors import FieldMessage, InvalidInput
from backfill_assets.engine.model.request_input import parse_asset_list, parse_conf_text
from backfill_assets.service import ClearInput

from .app import AppContext, cli, default_user, flag_of, json_option
from .request_commands import request_options, show_outcome

CLEAR_FLAGS = {"partition_key": "--partition"}


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
    asked = ClearInput(
        select=selection, partition_key=partition, past=past, future=future, from_day=first, to_day=last,
        only_failed=only_failed, allow_side_effects=parse_asset_list(options.pop("allow_side_effects")),
        conf=parse_conf_text(options.pop("conf")), requested_by=options.pop("requested_by") or default_user(),
        **options,
    )
    try:
        cleared = app.service().clear(asked, dry_run=not confirmed)
    except FieldMessage as exc:  # the service names partition_key; this command's flag for it is --partition
        raise InvalidInput(exc.worded(lambda name: CLEAR_FLAGS.get(name) or flag_of(name))) from exc
    heading = (
        f"clear {selection!r} → {', '.join(cleared.assets)}; {cleared.first}..{cleared.last} ({cleared.days_asked}); "
        f"reprocess {asked.reprocess.value}" + (" (only failed)" if only_failed else "")
    )
    show_outcome(cleared.plan, cleared.created, as_json, cleared.as_dict(), heading,
                 "run again with --yes to create the request")
