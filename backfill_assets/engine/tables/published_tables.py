"""Every published table the settings turn on, synced together: what the step, the daemon, the operations that
move pointers and ``reconcile`` call. A table that cannot be synced is named in the result and keeps serving what
it held; the catalog's pointer stays the truth and the next sync converges."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterable, Mapping, Protocol

from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.settings import Settings, TableSettings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.tables.records import SyncResult, TableLag

log = logging.getLogger(__name__)


class TableKind(Protocol):
    """One kind of published table (Iceberg, PostgreSQL), for every asset."""

    kind: str

    def identifier(self, asset: str) -> str: ...

    def lag(self, catalog: Catalog, asset: str) -> TableLag: ...

    def sync(self, catalog: Catalog, asset: str) -> SyncResult: ...

    def referenced_files(self, asset: str, kept_after: datetime | None = None) -> set[str]: ...

    def expire(self, asset: str, older_than: datetime) -> int: ...


@dataclass(frozen=True)
class SyncReport(JsonRecord):
    synced: tuple[SyncResult, ...] = ()
    failed: tuple[tuple[str, str], ...] = field(default=())  # (table, why)

    @property
    def ok(self) -> bool:
        return not self.failed


class PublishedTables:
    def __init__(self, settings: TableSettings, kinds: Iterable[TableKind] | None = None):
        self.settings = settings
        self.kinds: tuple[TableKind, ...] = tuple(kinds) if kinds is not None else _kinds_of(settings)
        if self.kinds:
            from backfill_assets.engine.tables.iceberg_table import quiet_pyiceberg  # pyarrow: only with tables on

            quiet_pyiceberg()

    @property
    def enabled(self) -> bool:
        return bool(self.kinds)

    def sync(self, catalog: Catalog, assets: Iterable[str]) -> SyncReport:
        """Bring every table of ``assets`` to the pointers; a failure is reported, never raised."""
        synced: list[SyncResult] = []
        failed: list[tuple[str, str]] = []
        for asset in assets:
            for kind in self.kinds:
                try:
                    synced.append(kind.sync(catalog, asset))
                except Exception as exc:  # noqa: BLE001 - the pointer is the truth; the next sync converges
                    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:600]
                    log.warning("published table %s not synced: %s", kind.identifier(asset), why)
                    failed.append((kind.identifier(asset), why))
        return SyncReport(tuple(synced), tuple(failed))

    def lag(self, catalog: Catalog, assets: Iterable[str]) -> list[TableLag]:
        lags: list[TableLag] = []
        for asset in assets:
            for kind in self.kinds:
                try:
                    lags.append(kind.lag(catalog, asset))
                except Exception as exc:  # noqa: BLE001 - a table that cannot be read is reported as such
                    why = " ".join(f"{type(exc).__name__}: {exc}".split())[:600]
                    lags.append(TableLag(kind.kind, kind.identifier(asset), asset, 0, (), why))
        return lags

    def join_publishes(self, catalog: Catalog) -> None:
        """Let each kind that can switch a day in the pointer move's own transaction (a PostgreSQL table on the
        catalog's database) join ``catalog``'s publishes and rollbacks; the others converge by sync."""
        for kind in self.kinds:
            join = getattr(kind, "join_publishes", None)
            if join is not None:
                try:
                    join(catalog)
                except Exception as exc:  # noqa: BLE001 - the table's database away: syncs converge it later
                    log.warning("published table %s cannot join publishes: %s", kind.kind, exc)

    def preparers(self) -> list[Callable[[Version], Any]]:
        """What the gate calls with a version whose checks passed, before its publish: each kind that copies rows
        (PostgreSQL) loads them then, so the publish's switch only attaches."""
        preparing = (getattr(kind, "prepare", None) for kind in self.kinds)  # not every kind has one
        return [prepare for prepare in preparing if callable(prepare)]

    def referenced_files(self, asset: str, kept_after: datetime | None = None) -> set[str]:
        files: set[str] = set()
        for kind in self.kinds:
            files |= kind.referenced_files(asset, kept_after)
        return files

    def expire(self, asset: str, older_than: datetime) -> int:
        return sum(kind.expire(asset, older_than) for kind in self.kinds)


def published_tables_of(settings: Settings, environ: Mapping[str, str] | None = None) -> PublishedTables:
    """The published tables of a process's settings (read from the environment when asked, never at import)."""
    return PublishedTables(TableSettings.from_env(settings, environ))


def _kinds_of(settings: TableSettings) -> tuple[TableKind, ...]:
    kinds: list[TableKind] = []
    if "iceberg" in settings.kinds:
        from backfill_assets.engine.tables.iceberg_table import IcebergTables

        kinds.append(IcebergTables(settings))
    if "postgres" in settings.kinds:
        from backfill_assets.engine.tables.postgres_table import PostgresTables

        if not settings.postgres_url:
            raise BackfillError(
                "the postgres published tables need a PostgreSQL database: set BACKFILL_POSTGRES_TABLES_URL "
                "(or put the catalog on PostgreSQL)"
            )
        kinds.append(PostgresTables(settings))
    return tuple(kinds)
