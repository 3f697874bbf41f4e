"""The shipped dagster.yaml's event log: Dagster's SQLite event log keeping its engines and connections."""

from __future__ import annotations

import os
from contextlib import contextmanager

from dagster._core.storage.event_log.schema import ConcurrencySlotsTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import INDEX_SHARD_NAME, SqliteEventLogStorage
from dagster._utils.concurrency import ConcurrencySlotStatus
from sqlalchemy import select
from sqlalchemy.pool import StaticPool

from .check_evaluations import StoresCheckEvaluationsSerializedOnce
from .event_store import StoresEventsWithStatementsBuiltOnce
from .pool_claims import AssignsFreedPoolSlots
from .sqlite_engines import ConfiguredWithoutDirectory, KeptEngines

# One connection per database file is enough (``StaticPool``): Dagster's storage holds ``_db_lock`` (a plain Lock)
# for as long as a connection is in use, so it has one user at a time, from any thread.
#
# Dagster's webserver follows a run's events by watching its database file change (``watch``: a watchdog observer on
# the folder, matching the run's ``.db`` path), which happened when the last connection closed. Kept open, a
# connection leaves new events in the WAL, where every reader finds them but the ``.db`` file does not change. So
# after a transaction that wrote to a run's file its modification time is set (``os.utime``): every watchdog
# backend reports that as the file modified (inotify's IN_ATTRIB, FSEvents' inode change, the polling observer's
# mtime). A passive checkpoint after every write did the same for 0.3 ms of CPU and a fsync (~0.02 ms now), nine
# writes per gated asset-day; SQLite's own checkpoint (every 1,000 WAL pages) and the one when the connection closes
# still copy the WAL into the file.

# Engines kept per process: a run touches its own database and the index; a daemon or webserver reading many
# runs keeps the most recent ones (an engine is one open file and a few kilobytes).
KEPT_ENGINES = 64


class SqliteEventLogReusingEngines(
    ConfiguredWithoutDirectory,
    AssignsFreedPoolSlots,
    StoresEventsWithStatementsBuiltOnce,
    StoresCheckEvaluationsSerializedOnce,
    SqliteEventLogStorage,
):
    """Dagster's ``SqliteEventLogStorage`` (same files in the same place, same schema) with one engine and one open
    connection per shard, kept, a pool slot freed while a step registers for it given to that step
    (``pool_claims.py``), its events stored with statements built once and a run's check evaluation in one index
    transaction, serialized once (``event_store.py``, ``check_evaluations.py``). Configured
    with no directory: it takes the instance's own (``<instance>/history/runs``, where Dagster's default puts it)
    when the instance registers it, so a process opening an instance other than its DAGSTER_HOME's reads and
    writes that instance's files. dagster.yaml::

        event_log_storage:
          module: backfill_assets.integration.runs.dagster_adapter
          class: SqliteEventLogReusingEngines
    """

    def __init__(self, inst_data=None):
        # Dagster's constructor opens the directory (it indexes a new storage): it runs in register_instance,
        # once the instance's directory is known.
        ConfiguredWithoutDirectory.__init__(self, inst_data)
        self._engines = KeptEngines(StaticPool, KEPT_ENGINES)
        self._tables_seen: set[str] = set()

    def register_instance(self, instance) -> None:
        if not hasattr(self, "_base_dir"):
            SqliteEventLogStorage.__init__(
                self, os.path.join(instance.root_directory, "history", "runs", ""), inst_data=self._inst_data
            )
        super().register_instance(instance)

    @contextmanager
    def _connect(self, shard: str):
        with self._db_lock:
            engine = self._engines.get(self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn:
                changes = conn.connection.dbapi_connection.total_changes
                with conn.begin():
                    yield conn
                if shard != INDEX_SHARD_NAME and conn.connection.dbapi_connection.total_changes != changes:
                    _wake_watchers(self.path_for_shard(shard))

    def has_table(self, table_name: str) -> bool:
        """Dagster asks before storing every check evaluation (``supports_asset_checks``, five per gated asset-day)
        and answers on a new engine that opens the index file again: ~1 ms of CPU each. A table its migrations made is
        never dropped while an instance uses it (Dagster caches its own ``supports_global_concurrency_limits``
        answer the same way), so one seen is remembered; one not there yet is asked again, a migration in another
        process may add it."""
        if table_name not in self._tables_seen and super().has_table(table_name):
            self._tables_seen.add(table_name)
        return table_name in self._tables_seen

    def _claim_concurrency_slot(self, concurrency_key: str, run_id: str, step_key: str) -> ConcurrencySlotStatus:
        """Take a free slot row of the pool in one statement. Dagster's reads a free row, then updates that row
        whatever it holds by then; ``FOR UPDATE SKIP LOCKED`` makes that safe on PostgreSQL, but SQLite has no row
        locks, so two steps that read the same free row both took it and ran at once in a pool of one. SQLite runs
        one writing statement at a time: the row is taken only if it is still free."""
        slots = ConcurrencySlotsTable.c
        free = (
            select(slots.id)
            .where(slots.concurrency_key == concurrency_key, slots.step_key.is_(None), slots.deleted.is_(False))
            .limit(1)
            .scalar_subquery()
        )
        with self.index_connection() as conn:
            taken = conn.execute(
                ConcurrencySlotsTable.update()
                .values(run_id=run_id, step_key=step_key)
                .where(slots.id == free, slots.step_key.is_(None))
            ).rowcount
        return ConcurrencySlotStatus.CLAIMED if taken else ConcurrencySlotStatus.BLOCKED

    def wipe(self) -> None:
        # Dagster's wipe deletes the run files: close them first, or the kept connections write to deleted files.
        with self._db_lock:
            self._engines.dispose()
        super().wipe()

    def dispose(self) -> None:
        with self._db_lock:
            self._engines.dispose()
        super().dispose()


def _wake_watchers(path: str) -> None:
    """Mark a run's file modified, so that a process watching it reads the events just committed to its WAL."""
    try:
        os.utime(path)
    except FileNotFoundError:  # deleted since the commit (a wipe): no one follows it any more
        pass
