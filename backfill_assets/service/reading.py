"""Reading published data: the verified, recorded read every consumer makes (``read``), and an operator's look at a
range of days that consumes nothing (``served``).

A read is recorded so that ``rollback`` can name everyone who consumed a version it takes off; a look (the demo
comparing readers, a report) is not a consumption, so it verifies the files the same way and records nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from backfill_assets.engine.model.errors import InvalidField, NotFound
from backfill_assets.engine.model.states import VERIFIED, VersionState
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.pointer_log import current_pointers

from .context import ServiceContext
from .versions import require_cell

if TYPE_CHECKING:  # pandas only where a frame is read
    import pandas as pd

# The version's fields a reader is told (``read --json``): which version the rows came from, and its digest.
READ_IDENTITY = ("version_id", "asset", "partition_key", "sha256", "rows")


@dataclass(frozen=True)
class PublishedRead:
    """A day's data as a reader gets it: the version it came from (its files verified against the catalog's
    sha256 before a row was returned) and its rows."""

    version: Version
    frame: pd.DataFrame

    def records(self) -> list[dict[str, Any]]:
        """The rows as JSON records (dates in ISO 8601), as ``read --format json`` prints them."""
        records: list[dict[str, Any]] = json.loads(self.frame.to_json(orient="records", date_format="iso"))
        return records

    def as_dict(self) -> dict[str, Any]:
        """What ``read --json`` prints: the version's identity and digest, and its records."""
        return {**{k: getattr(self.version, k) for k in READ_IDENTITY}, "records": self.records()}


def read(
    context: ServiceContext, asset: str, partition_key: str, reader: str, version_id: str | None = None,
    run_id: str | None = None,
) -> PublishedRead:
    """The day's serving version (or the verified ``version_id``), its files checked as every reader's are, the
    read recorded under ``reader`` so ``rollback`` names it; NotFound when nothing is published for the day."""
    require_cell(context, asset, partition_key)
    if version_id is None:
        version = context.catalog.current(asset, partition_key)
        if version is None:
            raise NotFound(f"{asset} {partition_key} has no published version")
    else:
        version = context.catalog.get(version_id)
        if (version.asset, version.partition_key) != (asset, partition_key):
            raise InvalidField("{version_id} {given} is not a version of {asset} {day}", given=version_id,
                               asset=asset, day=partition_key)
        if VersionState(version.state) not in VERIFIED:
            raise InvalidField("{version_id} {given} is {state}; only verified versions can be read",
                               given=version_id, state=version.state)
    frame = context.warehouse.read_version(version)
    context.catalog.record_external_read(reader, version, run_id)
    return PublishedRead(version, frame)


def served(context: ServiceContext, asset: str, first: str, last: str) -> list[PublishedRead]:
    """Every day of ``first``..``last`` something serves, oldest first, with its rows (files verified); nothing
    is recorded: a look at what the pointers serve, not a consumer's read."""
    require_cell(context, asset, first)
    require_cell(context, asset, last)
    _, days = current_pointers(context.catalog, asset)
    warehouse = context.warehouse
    return [PublishedRead(days[day], warehouse.read_version(days[day]))
            for day in sorted(days) if first <= day <= last]
