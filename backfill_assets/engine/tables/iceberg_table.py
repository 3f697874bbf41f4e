"""A gated asset's published days as an Apache Iceberg table, through pyiceberg.

The table ``<namespace>.<asset>`` is partitioned by ``partition_date`` (identity) and references the data files the
gate already wrote and verified: no copy. A sync applies the publish log after the table's own position (kept in
every snapshot's summary as ``backfill-assets.publish-seq``) in **one snapshot**: an ``overwrite`` that removes the
files of every day whose pointer moved and adds each day's current file, so a reader sees a day's old version or
its new one, whole, never both and never none. The table never leads the catalog's pointers (it applies committed
log rows only) and converges to them: whoever syncs next — the step after its publishes, the daemon, an
operation that moves pointers, ``reconcile --repair`` — applies what is missing.

Two writers syncing at once are ordered by Iceberg's optimistic commit. pyiceberg's own retry would rebuild the
snapshot on the new base with the *old* plan (a day could move backwards), so tables are created with
``commit.retry.num-retries`` 0 and a lost commit is planned again here from the table's new position.
"""

from __future__ import annotations

import logging
import sys
import time
import warnings
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from backfill_assets.engine.model.errors import BackfillError, quoted
from backfill_assets.engine.model.identity import table_name_of
from backfill_assets.engine.model.settings import TableSettings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.iceberg_catalog_rows import NotReadableHere, current_metadata_location
from backfill_assets.engine.store.pointer_log import PointerChanges, pointer_changes, pointer_ids_after
from backfill_assets.engine.tables.iceberg_position import seq_in_metadata
from backfill_assets.engine.tables.records import SyncResult, TableLag
from backfill_assets.engine.wap.faults import AFTER_TABLE_COMMIT, fault_point

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog as IcebergCatalog
    from pyiceberg.table import Table

SEQ_PROPERTY = "backfill-assets.publish-seq"
VERSIONS_PROPERTY = "backfill-assets.versions"
REQUESTS_PROPERTY = "backfill-assets.requests"
ACTIONS_PROPERTY = "backfill-assets.actions"
DAYS_PROPERTY = "backfill-assets.days"
# Commits this sync lost to other writers before this one (each planned again from the winner's table).
LOST_COMMITS_PROPERTY = "backfill-assets.lost-commits"
PROPERTY_MAX_CHARS = 8000
# Lost commits planned again before giving up (the next sync converges anyway).
MAX_COMMIT_TRIES = 8
TABLE_PROPERTIES = {
    "format-version": "2",
    # A lost commit must be planned again from the table's new position, not replayed (see the module's docstring).
    "commit.retry.num-retries": "0",
    "write.parquet.compression-codec": "zstd",
}
CATALOG_NAME = "backfill_assets"
# What a sync imports (lazily, so the CLI starts without them): ~2 s of CPU on this machine's cores. A process that
# forks run workers imports them once beforehand (integration/runs/warm_worker.py).
SYNC_MODULES = ("pyiceberg.catalog.sql", "pyiceberg.io.pyarrow", "pyiceberg.table", "pyiceberg.expressions")
NAME_MAPPING = "schema.name-mapping.default"

log = logging.getLogger(__name__)


class TableSyncError(BackfillError):
    """A published table could not be brought to the catalog's pointers (it keeps serving what it held)."""


@lru_cache(maxsize=8)
def _catalog(url: str, name: str | None, warehouse: str, io: tuple[tuple[str, str], ...]) -> IcebergCatalog:
    from pyiceberg.catalog import load_catalog
    from pyiceberg.catalog.sql import SqlCatalog

    if name:
        return load_catalog(name)  # pyiceberg's own configuration: a REST catalog, Glue, Hive, …
    # Cached for the process's life: a pooled connection the database dropped meanwhile (a restart, an outage) is
    # replaced before use, or the first sync after the catalog is back would fail on it.
    properties = {"uri": url, "warehouse": warehouse, "pool_pre_ping": "true", **dict(io)}
    try:
        return SqlCatalog(CATALOG_NAME, **properties)
    except Exception as exc:  # noqa: BLE001 — only the creation race below is handled; anything else is raised
        if not _lost_table_creation_race(exc):
            raise
        # pyiceberg checks for its catalog tables, then creates them: several processes syncing a fresh catalog at
        # once (workers of one request) can all see none, and all but one CREATE fails. The tables exist now.
        return SqlCatalog(CATALOG_NAME, **properties)


def _lost_table_creation_race(exc: BaseException) -> bool:
    """The database refused a CREATE TABLE because another process had just created the table (SQLite and
    PostgreSQL's "already exists", or PostgreSQL's duplicate row type of a concurrent CREATE)."""
    # By name: SQL stays in the store's modules (pyiceberg raises SQLAlchemy's DatabaseError subclasses here).
    database_error = any(cls.__name__ == "DatabaseError" for cls in type(exc).__mro__)
    text = str(exc)
    return database_error and ("already exists" in text or "pg_type_typname_nsp_index" in text)


def tables_location(warehouse_root: str) -> str:
    return f"{warehouse_root.rstrip('/')}/_tables"


class IcebergTables:
    """Every gated asset's Iceberg table in one catalog and namespace."""

    kind = "iceberg"

    def __init__(self, settings: TableSettings):
        self.settings = settings
        self.namespace = settings.iceberg_namespace

    @property
    def catalog(self) -> IcebergCatalog:
        s = self.settings
        return _catalog(s.iceberg_catalog_url, s.iceberg_catalog_name, tables_location(s.warehouse_root), s.iceberg_io)

    def identifier(self, asset: str) -> str:
        return f"{self.namespace}.{table_name_of(asset)}"

    def load(self, asset: str) -> Table | None:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self.catalog.load_table(self.identifier(asset))
        except NoSuchTableError:
            return None

    def position(self, asset: str) -> int:
        """The publish log's seq the table holds the pointers of (0: no table, or nothing applied). On the SQL
        catalog, read from its row and the metadata file it names (``iceberg_position``: no pyiceberg import);
        pyiceberg's load where that cannot answer for certain."""
        if not self.settings.iceberg_catalog_name:
            try:
                location = current_metadata_location(
                    self.settings.iceberg_catalog_url, CATALOG_NAME, self.namespace, table_name_of(asset))
                return 0 if location is None else seq_in_metadata(location, SEQ_PROPERTY)
            except NotReadableHere as why:
                log.debug("%s: position read by pyiceberg (%s)", self.identifier(asset), why)
        table = self.load(asset)
        return table_seq(table) if table is not None else 0

    def lag(self, catalog: Catalog, asset: str) -> TableLag:
        """The days whose pointer moved after the table's position."""
        seq = self.position(asset)
        return TableLag(self.kind, self.identifier(asset), asset, seq, tuple(pointer_ids_after(catalog, asset, seq)))

    def sync(self, catalog: Catalog, asset: str) -> SyncResult:
        """Bring the asset's table to the pointers as of now (creating it at its first published day)."""
        if not all(module in sys.modules for module in SYNC_MODULES):
            in_line = self._in_line(catalog, asset)
            if in_line is not None:
                return in_line
        from pyiceberg.exceptions import CommitFailedException

        conflicts = 0
        for _ in range(MAX_COMMIT_TRIES):
            table = self.load(asset)
            before = table_seq(table) if table is not None else 0
            changes = pointer_changes(catalog, asset, before)
            if changes.empty:
                return SyncResult(self.kind, self.identifier(asset), asset, before, before, (), ())
            if table is None:
                if not any(version.rows for version in changes.days.values()):
                    # Only days without rows yet: their files' columns have no type (an empty pandas column is
                    # Arrow's null type, which Iceberg refuses), so the table is made with the first day that has.
                    return SyncResult(self.kind, self.identifier(asset), asset, before, before, (), ())
                # Plan again from the table as it is once created: another creator may have committed to it
                # already, past this plan (applying it then would move days backwards).
                self._create(asset, changes)
                continue
            try:
                _commit(table, changes, conflicts)
            except CommitFailedException:
                conflicts += 1  # another writer committed first: plan again from its position
                time.sleep(0.05 * conflicts)
                continue
            fault_point(AFTER_TABLE_COMMIT)
            return SyncResult(
                self.kind, self.identifier(asset), asset, before, changes.seq, tuple(changes.days),
                tuple(v.version_id for v in changes.days.values()), 1, conflicts,
            )
        raise TableSyncError(
            f"Iceberg table {self.identifier(asset)}: {MAX_COMMIT_TRIES} commits in a row lost to other writers; "
            "it keeps serving what it held and the next sync applies the rest"
        )

    def _in_line(self, catalog: Catalog, asset: str) -> SyncResult | None:
        """The sync of a table no pointer moved past (nothing to apply), told from its ``lag``, else None. Only where
        pyiceberg is not imported yet: the daemon's sensor passes over every table every 30 s, and a code server whose
        tables are in line (or that has none yet) never pays pyiceberg's import (~0.6 CPU-s on a new daemon,
        docs/PERFORMANCE.md); where it is imported, the sync reads the table once, through it."""
        lag = self.lag(catalog, asset)
        if not lag.in_line:
            return None
        return SyncResult(lag.kind, lag.table, asset, lag.seq, lag.seq, (), ())

    def _create(self, asset: str, changes: PointerChanges) -> Table:
        """The asset's table, partitioned by day and mapping the files' columns by name, created in one commit: a
        creator that dies or loses a race can leave no table without them (pyiceberg cannot read the version files,
        which carry no Iceberg field ids, without the name mapping)."""
        from pyiceberg.exceptions import CommitFailedException, TableAlreadyExistsError

        schema = _file_schema(next(version for version in changes.days.values() if version.rows))
        self._ensure_namespace()
        location = f"{tables_location(self.settings.warehouse_root)}/{self.namespace}/{table_name_of(asset)}"
        try:
            with self.catalog.create_table_transaction(
                self.identifier(asset), schema=schema, location=location, properties=TABLE_PROPERTIES
            ) as tx:
                tx.set_properties({NAME_MAPPING: tx.table_metadata.schema().name_mapping.model_dump_json()})
                with tx.update_spec() as spec:
                    spec.add_identity(DAY_COLUMN)
        except (TableAlreadyExistsError, CommitFailedException):
            pass  # a concurrent creator made it first, whole: use it
        return self.catalog.load_table(self.identifier(asset))

    def _ensure_namespace(self) -> None:
        from pyiceberg.exceptions import NamespaceAlreadyExistsError

        try:
            self.catalog.create_namespace(self.namespace)
        except NamespaceAlreadyExistsError:
            pass
        except Exception:
            # pyiceberg's SQL catalog checks, then inserts: a creator that lost the race between the two gets the
            # database's unique-key error, and the namespace is there all the same.
            if not self.catalog.namespace_exists(self.namespace):
                raise

    def referenced_files(self, asset: str, kept_after: datetime | None = None) -> set[str]:
        """Every data file a snapshot that stays references: the current one and, ``kept_after`` given, those
        newer than it (what ``expire(asset, kept_after)`` keeps), else every snapshot (gc leaves these files)."""
        table = self.load(asset)
        if table is None or table.current_snapshot() is None:
            return set()
        if kept_after is None:
            return {str(p) for p in table.inspect.all_data_files().column("file_path").to_pylist()}
        current = table.current_snapshot()
        cutoff_ms = kept_after.timestamp() * 1000
        kept = [s.snapshot_id for s in table.snapshots()
                if s.timestamp_ms >= cutoff_ms or (current is not None and s.snapshot_id == current.snapshot_id)]
        files: set[str] = set()
        for snapshot_id in kept:
            files |= {str(p) for p in table.inspect.data_files(snapshot_id).column("file_path").to_pylist()}
        return files

    def expire(self, asset: str, older_than: datetime) -> int:
        """Expire the table's snapshots older than ``older_than`` (never the current one); returns how many."""
        table = self.load(asset)
        if table is None:
            return 0
        current = table.current_snapshot()
        keep = current.snapshot_id if current is not None else None
        cutoff_ms = older_than.timestamp() * 1000
        doomed = [s.snapshot_id for s in table.snapshots() if s.timestamp_ms < cutoff_ms and s.snapshot_id != keep]
        if doomed:
            table.maintenance.expire_snapshots().by_ids(doomed).commit()
        return len(doomed)


def table_seq(table: Table) -> int:
    """The publish log position a table's current snapshot holds: its own summary's, or (a snapshot someone else
    made) its nearest ancestor's."""
    snapshot = table.current_snapshot()
    while snapshot is not None:
        summary = snapshot.summary
        raw = summary[SEQ_PROPERTY] if summary is not None else None
        if raw is not None and str(raw).isdigit():
            return int(raw)
        parent = snapshot.parent_snapshot_id
        snapshot = table.snapshot_by_id(parent) if parent is not None else None
    return 0


def _file_schema(version: Version) -> Any:
    import pyarrow.parquet as pq  # here: reading a table's lag (reconcile) never needs it
    from pyarrow import fs as pafs  # noqa: F401 - pyarrow's filesystems resolve the path's scheme
    from upath import UPath

    path = UPath(str(version.path))
    with path.open("rb") as fh:
        schema = pq.read_schema(fh)
    if DAY_COLUMN not in schema.names:
        raise TableSyncError(
            f"{version.version_id}: its data file has no {DAY_COLUMN} column (written before the published tables); "
            "re-run the day to publish a version the table can reference"
        )
    untyped = _untyped_columns(schema)
    if untyped and version.rows:
        raise TableSyncError(
            f"{version.version_id}: column {', '.join(repr(name) for name in untyped)} has no type in its data file "
            "(every value missing, so pandas and Arrow could not tell one), which an Iceberg table cannot hold; give "
            "the column a dtype in the asset's code (for example .astype('string')) and run the day again"
        )
    return schema.remove_metadata()


def _untyped_columns(schema: Any) -> list[str]:
    """The columns of a file schema whose Arrow type is null: an object column of a frame with no value in it."""
    import pyarrow as pa

    return [field.name for field in schema if pa.types.is_null(field.type)]


def _commit(table: Table, changes: PointerChanges, lost_commits: int) -> None:
    """Switch every changed day in one snapshot (``iceberg_commit``, which imports pyiceberg when a sync runs)."""
    from backfill_assets.engine.tables.iceberg_commit import commit_changes

    commit_changes(table, changes, _summary(changes, lost_commits), _file_schema)


def _summary(changes: PointerChanges, lost_commits: int) -> dict[str, str]:
    return {
        SEQ_PROPERTY: str(changes.seq),
        VERSIONS_PROPERTY: _clip(",".join(v.version_id for v in changes.days.values())),
        REQUESTS_PROPERTY: _clip(",".join(changes.requests)),
        ACTIONS_PROPERTY: ",".join(changes.actions),
        DAYS_PROPERTY: str(len(changes.days)),
        LOST_COMMITS_PROPERTY: str(lost_commits),
    }


def _clip(text: str) -> str:
    return text if len(text) <= PROPERTY_MAX_CHARS else text[:PROPERTY_MAX_CHARS - 1] + "…"


def quiet_pyiceberg() -> None:
    """pyiceberg warns on every delete that matched nothing and every retry: noise for a caller that plans again."""
    warnings.filterwarnings("ignore", message="Delete operation did not match any records")


__all__ = ["IcebergTables", "SyncResult", "TableSyncError", "table_seq", "quoted"]
