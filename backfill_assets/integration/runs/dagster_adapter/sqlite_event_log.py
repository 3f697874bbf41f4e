"""The shipped dagster.yaml's event log: Dagster's SQLite event log keeping its SQLAlchemy engines."""

from __future__ import annotations

import os
from contextlib import contextmanager

from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS, SqliteEventLogStorage
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from .pool_claims import AssignsFreedPoolSlots

# --- the embedded SQLite storage, reusing its engines -------------------------------------------------------------
# Dagster's SQLite event log creates (and disposes) a SQLAlchemy engine for every connection. SQLAlchemy caches a
# statement's compiled form per engine, so every event a step stores is compiled again: in a chunk run that is
# a fifth to two fifths of a gated asset-day's CPU (``python -m bench.micro.chunk_step``). This class keeps one
# engine per database file instead. The pool stays NullPool: a connection is still opened and closed per use, so nothing
# is shared between threads or held across the warm launcher's forks; only the compiled statements are kept.

# Engines kept per process: a run touches its own database and the index; a daemon or webserver reading many
# runs keeps the most recent ones (an engine without connections is a few kilobytes).
KEPT_ENGINES = 64


class SqliteEventLogReusingEngines(AssignsFreedPoolSlots, SqliteEventLogStorage):
    """Dagster's ``SqliteEventLogStorage`` (same files in the same place, same schema) with one engine per shard,
    kept, and a pool slot freed while a step registers for it given to that step (``pool_claims.py``).
    Configured with no directory: it takes the instance's own (``<instance>/history/runs``, where Dagster's
    default puts it) when the instance registers it, so a process opening an instance other than its
    DAGSTER_HOME's reads and writes that instance's files. dagster.yaml::

        event_log_storage:
          module: backfill_assets.integration.runs.dagster_adapter
          class: SqliteEventLogReusingEngines
    """

    def __init__(self, inst_data=None):
        # Dagster's constructor opens the directory (it indexes a new storage): it runs in register_instance,
        # once the instance's directory is known.
        self._engines: dict[str, object] = {}
        self._inst_data = inst_data

    def register_instance(self, instance) -> None:
        if not hasattr(self, "_base_dir"):
            SqliteEventLogStorage.__init__(
                self, os.path.join(instance.root_directory, "history", "runs", ""), inst_data=self._inst_data
            )
        super().register_instance(instance)

    @classmethod
    def config_type(cls):
        return {}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data)

    def _engine(self, shard: str):
        conn_string = self.conn_string_for_shard(shard)
        engine = self._engines.pop(conn_string, None)
        if engine is None:
            engine = create_engine(
                conn_string, poolclass=NullPool, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
            )
        self._engines[conn_string] = engine  # most recently used last
        while len(self._engines) > KEPT_ENGINES:
            self._engines.pop(next(iter(self._engines)))
        return engine

    @contextmanager
    def _connect(self, shard: str):
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn
