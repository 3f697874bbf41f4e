"""The shipped dagster.yaml's run and schedule storage: Dagster's SQLite ones keeping their engines and connections.

Dagster's ``SqliteRunStorage`` and ``SqliteScheduleStorage`` create an engine (and open the file) on every
``connect``: a daemon reads its run queue every second and writes heartbeats and sensor ticks, the webserver and
the tests' waits read runs many times a second. Kept, reading the latest runs takes a tenth of the CPU
(``sqlite_engines.py``). Same files in the same place (``<instance>/history/runs.db``, ``<instance>/schedules/
schedules.db``), same schema: deleting the blocks from dagster.yaml goes back to Dagster's classes.

Unlike the event log, these storages take no lock around a connection and threads use them at once (the daemon's
loops, the webserver's requests) and a connection may be opened while another is open in the same thread: the pool
hands each user its own connection (``QueuePool``) and keeps a few of them open between uses.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from dagster import DagsterInstance
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from sqlalchemy.engine import Connection
from sqlalchemy.pool import QueuePool

from .sqlite_engines import ConfiguredWithoutDirectory, KeptEngines

if TYPE_CHECKING:
    from dagster._serdes import ConfigurableClassData

    class _DagsterStorage:
        """What the mixin is placed before, as the checker sees it: both of Dagster's SQLite storages have these."""

        _conn_string: str
        _inst_data: ConfigurableClassData | None

        def register_instance(self, instance: DagsterInstance) -> None: ...

        def dispose(self) -> None: ...

else:
    _DagsterStorage = object

# Connections kept open per storage between uses; more are opened (and closed after use) when threads need them.
KEPT_CONNECTIONS = 4


class _KeepingConnections(ConfiguredWithoutDirectory, _DagsterStorage):
    """What both storages add to Dagster's class (opened by ``_open`` in the instance's directory)."""

    def __init__(self, inst_data: ConfigurableClassData | None = None) -> None:
        # Dagster's constructor needs the file, which Dagster's from_local creates (and migrates): both run in
        # register_instance, once the instance's directory is known.
        ConfiguredWithoutDirectory.__init__(self, inst_data)
        self._engines = KeptEngines(QueuePool, kept=1, pool_size=KEPT_CONNECTIONS, max_overflow=-1)

    def _open(self, instance_directory: str) -> None:
        raise NotImplementedError  # each storage opens its own Dagster class's file

    def register_instance(self, instance: DagsterInstance) -> None:
        if not hasattr(self, "_conn_string"):
            self._open(instance.root_directory)
        super().register_instance(instance)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engines.get(self._conn_string).connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self._engines.dispose()
        super().dispose()


class SqliteRunStorageKeepingConnections(_KeepingConnections, SqliteRunStorage):
    """Dagster's ``SqliteRunStorage`` (``<instance>/history/runs.db``) with its engine and a few connections kept.
    Configured with no directory: it takes the instance's own when the instance registers it. dagster.yaml::

        run_storage:
          module: backfill_assets.integration.runs.dagster_adapter
          class: SqliteRunStorageKeepingConnections
    """

    def _open(self, instance_directory: str) -> None:
        prepared = SqliteRunStorage.from_local(os.path.join(instance_directory, "history", ""))
        SqliteRunStorage.__init__(self, prepared._conn_string, inst_data=self._inst_data)


class SqliteScheduleStorageKeepingConnections(_KeepingConnections, SqliteScheduleStorage):
    """Dagster's ``SqliteScheduleStorage`` (``<instance>/schedules/schedules.db``) with its engine and a few
    connections kept, in the instance's own directory. dagster.yaml::

        schedule_storage:
          module: backfill_assets.integration.runs.dagster_adapter
          class: SqliteScheduleStorageKeepingConnections
    """

    def _open(self, instance_directory: str) -> None:
        prepared = SqliteScheduleStorage.from_local(os.path.join(instance_directory, "schedules"))
        SqliteScheduleStorage.__init__(self, prepared._conn_string, inst_data=self._inst_data)
