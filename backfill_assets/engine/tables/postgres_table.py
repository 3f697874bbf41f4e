"""A gated asset's published days as a PostgreSQL table, for teams whose marts live in PostgreSQL.

``<schema>.<asset>`` (schema ``published`` by default, on ``TableSettings.postgres_url``) is partitioned by list of
``partition_date``: each day is one attached partition, the table of the version its pointer names. A version is
loaded once into its own table (COPY of its verified data file, rows counted against the catalog's); switching a
day to another version is a DETACH of the old table and an ATTACH of the new one in one transaction, so a reader
of the parent sees the old day or the new one, whole. Its SQL lives in ``engine/store/pg_tables.py``.

Like the Iceberg kind, the table is a projection of the catalog's pointers: ``sync`` applies only what the catalog
has committed (it re-reads the pointers after taking the asset's lock), never leads them and converges whenever
anyone syncs. When the catalog lives on the same database the table can do better: ``join_publishes(catalog)``
makes every publish and rollback of that catalog switch its day **in its own transaction**, before the pointer's
compare-and-swap, so the switch commits with the move or rolls back with it (see ``switch_in_transaction``).
"""

from __future__ import annotations

import logging
from datetime import date, datetime
from typing import Any

import pyarrow as pa

from backfill_assets.engine.model.identity import table_name_of
from backfill_assets.engine.model.settings import TableSettings
from backfill_assets.engine.store import pg_tables as pg
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.parquet_files import parquet_table
from backfill_assets.engine.store.pg_types import PgTableError
from backfill_assets.engine.store.pointer_log import current_pointers, pointer_ids_after
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.records import SyncResult, TableLag

# How long a sync waits for the asset's lock and the parent table (a long query of a reader holds it), and how
# long a version's load waits for another process loading the same version.
SYNC_LOCK_TIMEOUT = 10.0
LOAD_LOCK_TIMEOUT = 300.0
# A publish's own switch waits less: past it, the publish goes on without it and the next sync switches the day.
SWITCH_LOCK_TIMEOUT = 2.0
# A transaction that already wrote may hold catalog row locks: it never waits for a reader's lock.
NO_WAIT = 0.001

log = logging.getLogger(__name__)


class PostgresTables:
    """Every gated asset's PostgreSQL table in one database and schema."""

    kind = "postgres"

    def __init__(self, settings: TableSettings):
        if not settings.postgres_url:
            raise PgTableError("the postgres published tables need a PostgreSQL database URL")
        self.settings = settings
        self.url = settings.postgres_url
        self.schema = settings.postgres_schema
        self.warehouse = Warehouse(settings.warehouse_root)
        self.switch_lock_timeout = SWITCH_LOCK_TIMEOUT
        self.sync_lock_timeout = SYNC_LOCK_TIMEOUT
        self._schema_ready = False

    @property
    def engine(self) -> Any:
        return pg.tables_engine(self.url)

    def identifier(self, asset: str) -> str:
        return f"{self.schema}.{table_name_of(asset)}"

    def _ready(self) -> None:
        if not self._schema_ready:
            pg.ensure_schema(self.engine, self.schema)
            self._schema_ready = True

    # ---- loading -------------------------------------------------------------------------------------------------

    def prepare(self, version: Version) -> str:
        """Load ``version``'s rows into its own table (once; later calls return at once) and return its name.

        The gate calls it after a version's checks passed, before the publish, so the publish's own switch (and
        any sync) only attaches; skipping it is safe (they load what is missing). The data file is read through
        ``Warehouse.verify_version`` (manifest and sha256 as the catalog recorded them) and its rows counted
        against ``Version.rows`` before and after the COPY."""
        self._ready()
        with self.engine.connect() as conn:
            loaded = pg.loaded_table(conn, self.schema, version.version_id)
        if loaded is not None:
            return loaded
        return pg.load_version(self.engine, self.schema, version, self._rows_of(version), LOAD_LOCK_TIMEOUT)

    def _rows_of(self, version: Version) -> pa.Table:
        table = parquet_table(self.warehouse.verify_version(version))
        if table.num_rows != version.rows:
            raise PgTableError(f"version {version.version_id}: its file holds {table.num_rows} rows, the catalog "
                                  f"says {version.rows}")
        if DAY_COLUMN not in table.column_names:  # written before data files carried their day: add it here
            day = date.fromisoformat(version.partition_key)
            table = table.append_column(pa.field(DAY_COLUMN, pa.date32(), nullable=False),
                                        pa.array([day] * table.num_rows, pa.date32()))
        return table.replace_schema_metadata(None)

    # ---- sync and lag --------------------------------------------------------------------------------------------

    def sync(self, catalog: Catalog, asset: str) -> SyncResult:
        """Bring the asset's table to the pointers as the catalog has committed them, in one transaction."""
        self._ready()
        _, pointers = current_pointers(catalog, asset)
        with self.engine.connect() as conn:
            served = pg.serving(conn, self.schema, asset)
        for day, version in pointers.items():  # load outside the lock: the switch below only attaches
            if _served_id(served, day) != version.version_id:
                self.prepare(version)
        with self.engine.begin() as conn:
            with pg.lock_timeout(conn, self.sync_lock_timeout, f"syncing {self.identifier(asset)}"):
                pg.lock_asset(conn, self.schema, asset)
                before = pg.position(conn, self.schema, asset)
                served = pg.serving(conn, self.schema, asset)
                # Read under the lock: a publish that switched its day in its own transaction has committed.
                seq, pointers = current_pointers(catalog, asset)
                changed = {d: v for d, v in pointers.items() if _served_id(served, d) != v.version_id}
                switches = [pg.DaySwitch(d, v.version_id, self._loaded(conn, v)) for d, v in changed.items()]
                pg.switch_days(conn, self.schema, asset, switches, "sync")
                pg.record_position(conn, self.schema, asset, seq)
        return SyncResult(
            self.kind, self.identifier(asset), asset, before, max(seq, before), tuple(changed),
            tuple(v.version_id for v in changed.values()), 1 if changed else 0, 0,
        )

    def _loaded(self, conn: Any, version: Version) -> str:
        # Loaded before the lock in almost every case; a pointer that moved meanwhile is loaded now.
        return pg.loaded_table(conn, self.schema, version.version_id) or self.prepare(version)

    def lag(self, catalog: Catalog, asset: str) -> TableLag:
        """The days whose attached partition is not the version their pointer names."""
        self._ready()
        with self.engine.connect() as conn:
            served = pg.serving(conn, self.schema, asset)
            seq = pg.position(conn, self.schema, asset)
        pointers = pointer_ids_after(catalog, asset, 0)
        behind = tuple(d for d, version_id in pointers.items() if _served_id(served, d) != version_id)
        return TableLag(self.kind, self.identifier(asset), asset, seq, behind)

    def serving(self, asset: str) -> dict[str, str]:
        """Every day of the asset's table and the version its partition holds."""
        self._ready()
        with self.engine.connect() as conn:
            return {d: s.version_id for d, s in pg.serving(conn, self.schema, asset).items()}

    # ---- the publish's own transaction ---------------------------------------------------------------------------

    def join_publishes(self, catalog: Catalog) -> bool:
        """Switch each day in the same transaction as the catalog's pointer move, when the catalog lives on this
        table's database (else nothing changes and syncs converge the table); returns whether it joined.

        How to call it: once per ``Catalog`` instance that publishes (the step's, the service's), right after
        opening it; the gate's ``before_publish`` hook should call ``prepare`` so the publish only attaches."""
        if catalog.engine.dialect.name != "postgresql" or not pg.same_database(catalog.url, self.url):
            return False
        self._ready()
        catalog.add_in_transaction_switch(self)
        return True

    def switch_in_transaction(self, conn: Any, version: Version, action: str) -> None:
        """Called by the catalog inside the transaction that is about to move ``version``'s pointer, before the
        compare-and-swap (so before the ``log_head`` lock it takes last), in a savepoint: if this raises, the
        move goes on without the switch and the next sync makes it. If the move fails, the switch rolls back.

        Lock order: the asset's advisory lock, then the parent and the two partitions (ACCESS EXCLUSIVE), then
        the catalog's pointer row and ``log_head``; a sync takes the first two the same way. A transaction that
        already wrote (a later move of a multi-move operation) may hold catalog locks, so it never waits for the
        parent (a reader may hold it long) and never loads: it switches at once or leaves the day to the sync."""
        may_wait = not pg.has_written(conn)
        table = pg.loaded_table(conn, self.schema, version.version_id)
        if table is None and may_wait:
            table = self.prepare(version)  # on its own connection: committed, whatever the move does
        if table is None:
            log.info("%s %s: not switched with its %s (not loaded yet); the next sync switches it",
                     self.identifier(version.asset), version.partition_key, action)
            return
        waits = self.switch_lock_timeout if may_wait else NO_WAIT
        with pg.lock_timeout(conn, waits, f"switching {self.identifier(version.asset)} {version.partition_key}"):
            pg.lock_asset(conn, self.schema, version.asset)
            if pg.loaded_table(conn, self.schema, version.version_id) is None:
                return  # expired meanwhile: the next sync loads it again
            served = pg.serving(conn, self.schema, version.asset).get(version.partition_key)
            if served is None or served.version_id != version.version_id:
                switch = pg.DaySwitch(version.partition_key, version.version_id, table)
                pg.switch_days(conn, self.schema, version.asset, [switch], action)

    # ---- files and expiry ----------------------------------------------------------------------------------------

    def referenced_files(self, asset: str, kept_after: datetime | None = None) -> set[str]:
        """None: the table holds copies of the rows, not references to the version files."""
        return set()

    def expire(self, asset: str, older_than: datetime) -> int:
        """Drop the asset's version tables that serve no day and stopped serving (or were loaded and never
        attached) before ``older_than``; returns how many. A rollback to one of them loads it again."""
        self._ready()
        with self.engine.begin() as conn:
            with pg.lock_timeout(conn, self.sync_lock_timeout, f"expiring {self.identifier(asset)}"):
                pg.lock_asset(conn, self.schema, asset)
                return pg.expire_tables(conn, self.schema, asset, older_than)


def _served_id(served: dict[str, pg.Served], day: str) -> str | None:
    entry = served.get(day)
    return entry.version_id if entry is not None else None
