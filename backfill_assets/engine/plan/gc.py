"""Retention: purge the files of old non-current versions; the catalog rows stay for audit (state PURGED)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.intervals import iso
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog

if TYPE_CHECKING:  # the warehouse module imports pandas and pyarrow: only where files are read
    from backfill_assets.engine.store.storage import Warehouse

PURGEABLE = (
    VersionState.SUPERSEDED,
    VersionState.ROLLED_BACK,
    VersionState.REJECTED,
    VersionState.ABANDONED,
)


@dataclass(frozen=True)
class PurgedVersion(JsonRecord):
    """A version gc marked PURGED (or, in a dry run, would): its row stays for audit, its file goes."""

    version_id: str
    state: VersionState  # the state it had before the purge
    created_at: str
    path: str | None


def collect_garbage(
    catalog: Catalog, older_than_days: int, now: datetime, dry_run: bool, referenced: frozenset[str] = frozenset(),
    assets: Collection[str] | None = None,
) -> list[PurgedVersion]:
    """Mark the versions past retention PURGED in the catalog (``dry_run``: only list them); their files go after
    the marks commit (``remove_purged_files``). Never a current version, never the version a rollback of the
    current pointer would restore, never one whose file a published table's kept snapshot still references
    (``referenced``: a later pass purges it once that snapshot has expired). ``assets``: only versions of these (a
    code location's own: another location sharing the catalog has its own retention and its own tables)."""
    if not isinstance(older_than_days, int) or older_than_days < 0:
        raise InvalidField("{older_than_days} {value!r} must be a whole number of days >= 0", value=older_than_days)
    try:
        cutoff = iso(now - timedelta(days=older_than_days))
    except OverflowError:
        return []  # a retention longer than the calendar: no version is that old
    candidates = catalog.purgeable_versions([s.value for s in PURGEABLE], cutoff)
    if assets is not None:
        candidates = [v for v in candidates if v.asset in assets]
    protected: dict[tuple[str, str], set[str]] = {}
    purged: list[PurgedVersion] = []
    for version in candidates:
        cell = (version.asset, version.partition_key)
        if cell not in protected:
            keep = set()
            current = catalog.current(*cell)
            if current is not None:
                keep.add(current.version_id)
            target = catalog.rollback_target(*cell)
            if target is not None:
                keep.add(target.version_id)
            protected[cell] = keep
        if version.version_id in protected[cell] or (version.path and str(version.path) in referenced):
            continue
        entry = PurgedVersion(version.version_id, VersionState(version.state), version.created_at, version.path)
        if not dry_run:
            catalog.purge(version.version_id)
        purged.append(entry)
    return purged


def retention_cutoff(now: datetime, older_than_days: int) -> datetime | None:
    """When retention begins (None: a retention longer than the calendar)."""
    try:
        return now - timedelta(days=older_than_days)
    except OverflowError:
        return None


def remove_purged_files(warehouse: Warehouse, purged: Sequence[PurgedVersion]) -> None:
    """The files of versions ``collect_garbage`` marked PURGED, once the marks have committed: catalog first, so a
    crash between the two leaves orphan files, never a row pointing at nothing."""
    for entry in purged:
        if entry.path:
            warehouse.remove_version(entry.path)
