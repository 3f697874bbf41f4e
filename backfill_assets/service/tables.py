"""The published tables as operations: how far each is behind the pointers, and bringing them in line (what
``backfill-assets tables`` and the daemon's ``backfill_published_tables`` sensor call)."""

from __future__ import annotations

from collections.abc import Sequence

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.identity import validate_asset_name
from backfill_assets.engine.tables.published_tables import SyncReport
from backfill_assets.engine.tables.records import TableLag

from .context import ServiceContext


def data_assets(context: ServiceContext, assets: Sequence[str] | None) -> tuple[str, ...]:
    """``assets`` checked against the code location's gated assets (None or empty: all of them)."""
    known = context.graph.data_assets
    if not assets:
        return known
    for name in assets:
        validate_asset_name(name)
        if name not in known:
            raise InvalidField("{asset} %r is not a gated asset of this code location (known: %s)"
                               % (name, ", ".join(known) or "none"))
    return tuple(dict.fromkeys(assets))


def status(context: ServiceContext, assets: Sequence[str] | None = None) -> list[TableLag]:
    """Each published table of ``assets``: its position in the publish log and the days it is behind."""
    return context.tables.lag(context.catalog, data_assets(context, assets))


def sync(context: ServiceContext, assets: Sequence[str] | None = None) -> SyncReport:
    """Bring the published tables of ``assets`` to the pointers (a table that cannot be is named, not raised)."""
    return context.tables.sync(context.catalog, data_assets(context, assets))
