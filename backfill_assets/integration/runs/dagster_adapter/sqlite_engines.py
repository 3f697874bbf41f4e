"""What the shipped SQLite storages share: SQLAlchemy engines kept per file, each with its connections open, safe
across the warm launcher's forks; and a configuration with no directory (each takes its instance's own)."""

from __future__ import annotations

import os

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.pool import Pool

from .alembic_scripts import keep_alembic_script_directories

# Dagster's SQLite storages create (and dispose) an engine for every connection: every statement is compiled again
# and the file is opened and closed on every use (the close checkpoints the WAL and deletes it, the next open makes
# it again). Kept, a run's CPU per gated asset-day fell by about two fifths (``python -m bench.micro.chunk_step``)
# and a read of the run storage from 1.2 ms to 0.1 ms.
#
# A connection is never used across a fork: the warm launcher forks run workers from a process that holds these
# connections, and SQLite forbids using, or even closing, a connection in a child (closing it would checkpoint and
# delete a WAL the child holds no lock on). A child therefore starts with no engines and keeps its parent's
# referenced, untouched, for as long as it lives.

# How long a connection waits on another's write lock before "database is locked": pysqlite's 5 s is too short
# for contended writers. Ours, not Dagster's ``SQLITE_BUSY_TIMEOUT_SECONDS`` (the same 30 s), which 1.13.0 lacks.
SQLITE_BUSY_TIMEOUT_SECONDS = 30

# Engines a forked child inherited: referenced here so they are never garbage-collected (which closes them).
_INHERITED: list[dict[str, Engine]] = []


class KeptEngines:
    """The engines of one storage, by connection string, most recently used last, at most ``kept`` of them."""

    def __init__(self, poolclass: type[Pool], kept: int, **pool_args) -> None:
        self._poolclass, self._kept, self._pool_args = poolclass, kept, pool_args
        self._engines: dict[str, Engine] = {}
        self._pid = os.getpid()

    def __len__(self) -> int:
        return len(self._engines)

    def get(self, conn_string: str) -> Engine:
        if self._pid != os.getpid():  # a forked child: its parent's connections are not its own
            self.dispose()
        engine = self._engines.pop(conn_string, None)
        if engine is None:
            engine = create_engine(
                conn_string,
                poolclass=self._poolclass,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
                **self._pool_args,
            )
            event.listen(engine, "connect", _sync_at_checkpoints)
        self._engines[conn_string] = engine
        while len(self._engines) > self._kept:
            self._engines.pop(next(iter(self._engines))).dispose()
        return engine

    def engines(self) -> list[Engine]:
        return list(self._engines.values()) if self._pid == os.getpid() else []

    def dispose(self) -> None:
        """Close this process's connections (a later ``get`` opens new ones); a child only lets go of its parent's."""
        if self._pid != os.getpid():
            _INHERITED.append(self._engines)
        else:
            for engine in self._engines.values():
                engine.dispose()
        self._engines, self._pid = {}, os.getpid()


def _sync_at_checkpoints(dbapi_connection, _record) -> None:
    """``synchronous=NORMAL``, as the catalog's own connections have (``engine/store/db.py``): Dagster makes each of
    its files WAL when it creates it, and in WAL mode SQLite's default (FULL) flushes the disk at every commit, nine
    per gated asset-day in a run's event log. NORMAL flushes at checkpoints only: a commit survives the process
    being killed at any point and the file is never corrupted; a power loss can take back the last commits, as it
    can the catalog's (whose publish is the truth: ``reconcile`` names a published version whose materialization
    is missing, ``--repair`` records it)."""
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


class ConfiguredWithoutDirectory:
    """A storage dagster.yaml names with no config: its directory is the instance's, known once the instance
    registers it (so a process opening an instance other than its DAGSTER_HOME's uses that instance's files)."""

    def __init__(self, inst_data=None):
        self._inst_data = inst_data
        keep_alembic_script_directories()

    @classmethod
    def config_type(cls):
        return {}

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data)
