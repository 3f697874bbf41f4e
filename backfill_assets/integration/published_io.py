"""How an ordinary Dagster asset reads a gated asset: its published days, never a version in flight or rejected.

A gated asset writes through write–audit–publish and hands Dagster no value, so Dagster's default IO manager has
nothing to load (``FileNotFoundError`` under ``storage/``). ``backfill_definitions`` makes every gated asset's
IO manager this one, so a plain downstream asset just names it as a parameter, as with any Dagster asset:

```python
@dg.asset(partitions_def=daily, deps=...)          # any partitioning: Dagster maps it to the gated days
def usage_report(daily_usage: pd.DataFrame) -> ...
```

Each day is read through the service's one read (its files verified, the read recorded with the asset and its run,
so ``rollback`` lists it among the consumers of a bad version); a day with nothing published fails the step naming
the day. Storing is a no-op: the gate already wrote, audited and published the version.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
import pandas as pd

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.integration.resources import BackfillResource

# The resource key of the gated assets' IO manager; a plain asset may name it too: AssetIn(input_manager_key=...).
PUBLISHED_IO_MANAGER = "backfill_published"
# How many missing days an error names before it counts the rest.
MISSING_DAYS_SHOWN = 5


class PublishedDataIOManager(dg.IOManager):
    """Loads a gated asset's published days into an ordinary asset (pandas, the days concatenated in order)."""

    def __init__(self, graph: AssetGraph, backfill: BackfillResource):
        self._graph = graph
        self._backfill = backfill

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Nothing to store: a gated asset's data is its published version."""

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        from backfill_assets.integration.service_wiring import backfills_for_instance

        asset = context.asset_key.to_user_string()
        days = list(context.asset_partition_keys) if context.has_asset_partitions else []
        if not days:
            raise dg.Failure(f"{asset} is read one business day at a time; {_consumer(context)} maps to none of its "
                             "days (give it a partitions definition or a partition mapping)")
        service = backfills_for_instance(
            self._graph, context.instance, catalog=self._backfill.catalog(), warehouse=self._backfill.warehouse()
        )
        _require_published(service, asset, days, _consumer(context))
        reader, run_id = f"asset:{_consumer(context)}", _run_id(context)
        frames = [service.read(asset, day, reader=reader, run_id=run_id).frame for day in days]
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _require_published(service: Any, asset: str, days: list[str], consumer: str) -> None:
    """Refuse before reading anything: a consumer sees all its days published, or none of them."""
    missing = [day for day in days if service.serving(asset, day) is None]
    if not missing:
        return
    shown = ", ".join(missing[:MISSING_DAYS_SHOWN])
    more = f" and {len(missing) - MISSING_DAYS_SHOWN} more" if len(missing) > MISSING_DAYS_SHOWN else ""
    # A Failure, not a retried error: the day stays unpublished until a run of the gated asset publishes it.
    raise dg.Failure(
        description=f"{consumer} reads {asset} {shown}{more}: nothing is published for "
                    f"{'that day' if len(missing) == 1 else 'those days'} (backfill it, or wait for its publish)",
        allow_retries=False,
    )


def _consumer(context: dg.InputContext) -> str:
    """The reading asset's name (its op's, which is the asset's for an ``@asset``)."""
    return context.op_def.name


def _run_id(context: dg.InputContext) -> str | None:
    # InputContext has no public run id; the step context it carries in a run does (absent in build_input_context).
    try:
        return context.step_context.run_id
    except Exception:  # noqa: BLE001 - a context built by hand has no run; the read is still recorded
        return None
