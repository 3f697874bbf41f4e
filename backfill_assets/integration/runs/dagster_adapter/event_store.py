"""How the shipped SQLite event log stores one event: Dagster's ``SqliteEventLogStorage.store_event``, its rows
column for column, with its statements built once and a run's check evaluation (or its planned evaluation)
mirrored in one transaction.

Dagster builds each event's insert anew (``insert().values(**row)``: a bound parameter per column and the
statement's cache key computed again, ~0.08 ms against ~0.02 ms for a statement built once and given the row),
and mirrors a run's check evaluation into the index in two transactions, its event serialized once for the event
row and again for the ``asset_check_executions`` row (``check_evaluations.py``), and so the planned evaluation a
run stores at its start for each selected check. A gated asset-day stores nine events, five of them check
evaluations; a one-day run of a gated asset stores five planned evaluations too.
``tests/integration/test_sqlite_storage.py`` compares every row this writes, in the run's file and in the index,
with the rows Dagster's own class writes for the same events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster import DagsterEventType
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS, EVENT_TYPE_TO_PIPELINE_RUN_STATUS
from dagster._core.storage.event_log.schema import AssetKeyTable, SqlEventLogStorageTable
from sqlalchemy import bindparam
from sqlalchemy.exc import IntegrityError

from .check_evaluations import refuse_duplicates

if TYPE_CHECKING:  # the class this mixin is placed before
    from .check_evaluations import StoresCheckEvaluationsSerializedOnce as _Base
else:
    _Base = object

# Given each event's row (``_event_to_row``, Dagster's): compiled once per process, like any cached statement.
INSERT_EVENT = SqlEventLogStorageTable.insert()
INSERT_ASSET_KEY = AssetKeyTable.insert()
UPDATE_ASSET_KEY = AssetKeyTable.update().where(AssetKeyTable.c.asset_key == bindparam("where_asset_key"))
# Days whose last stored materialization a process keeps (forgotten all at once past this: a step asks for the
# day it has just stored, never for an old one).
REMEMBERED_MATERIALIZATIONS = 1024


class StoresEventsWithStatementsBuiltOnce(_Base):
    """``store_event`` as Dagster's SQLite event log does it (the event in its run's file; an asset event, a check
    event and a run status event mirrored in the index, an asset event with its tags and its ``asset_keys`` row
    in the same transaction), each insert a statement built once; a run's check evaluation and its execution row
    in one index transaction, sharing the event's serialization."""

    def store_event(self, event: dg.EventLogEntry) -> None:
        row = self._event_to_row(event)
        with self.run_connection(event.run_id) as conn:
            conn.execute(INSERT_EVENT, row)
        kind = event.dagster_event_type
        if kind in ASSET_EVENTS:
            with self.index_transaction() as conn:
                event_id = _insert_event(conn, row)
                if event_id is None:
                    raise dg.DagsterInvariantViolationError("Cannot store asset event tags for null event id.")
                self._store_asset_event_tags(conn, [event], [event_id])
                self._store_asset_event(conn, event, event_id)
            if kind == DagsterEventType.ASSET_MATERIALIZATION:
                self._remember_materialization(event, event_id)
        elif kind == DagsterEventType.ASSET_CHECK_EVALUATION and event.run_id and self.supports_asset_checks:
            with self.index_connection() as conn:
                event_id = _insert_event(conn, row)
                updated = self._store_check_execution(conn, event, event_id, row["event"])
            refuse_duplicates(event, updated)
        elif kind == DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED and self.supports_asset_checks:
            with self.index_connection() as conn:
                event_id = _insert_event(conn, row)
                self._store_planned_check(conn, event, event_id, row["event"])
        elif kind in ASSET_CHECK_EVENTS:  # a runless evaluation (or any, with no check table): Dagster's own
            with self.index_connection() as conn:
                event_id = _insert_event(conn, row)
            self.store_asset_check_event(event, event_id)
        if kind in EVENT_TYPE_TO_PIPELINE_RUN_STATUS:
            with self.index_connection() as conn:
                conn.execute(INSERT_EVENT, row)

    def _remember_materialization(self, event: dg.EventLogEntry, event_id: int) -> None:
        """The day's materialization this process stored last, committed: what a step's check evaluations point at
        a moment later (``stored_materialization``) without reading it back (a record read is the materialization
        deserialized, ~1.6 ms)."""
        materialization = event.asset_materialization
        if materialization is None:
            return
        stored: dict[tuple[str, str | None], tuple[Any, int, str, float]] | None = getattr(
            self, "_stored_materializations", None)
        if stored is None or len(stored) >= REMEMBERED_MATERIALIZATIONS:
            stored = {}
            self._stored_materializations = stored
        version = materialization.metadata.get("version_id")
        stored[(materialization.asset_key.to_string(), materialization.partition)] = (
            None if version is None else version.value, event_id, event.run_id, event.timestamp)

    def stored_materialization(
        self, key: dg.AssetKey, partition: str, version_id: str
    ) -> tuple[int, str, float] | None:
        """(storage id, run id, timestamp) of the materialization of ``key``'s ``partition`` carrying ``version_id``
        that this process stored last, if it did; None: not known here (read it from the event log)."""
        entry = getattr(self, "_stored_materializations", {}).get((key.to_string(), partition))
        if entry is None or entry[0] != version_id:
            return None
        return entry[1], entry[2], entry[3]

    def _store_asset_event(self, conn: Any, event: dg.EventLogEntry, event_id: int) -> None:
        """Dagster's: the asset's ``asset_keys`` row set from its event, the same values. Dagster inserts it and,
        when the asset has one already (after its first event, so nearly always), catches the IntegrityError and
        updates it; here the update comes first and the insert only when it found no row."""
        dagster_event = event.dagster_event
        if dagster_event is None or dagster_event.asset_key is None:
            return
        values = self._get_asset_entry_values(event, event_id, self._has_asset_key_index_cols_on_connection(conn))
        if not values:
            return
        key = dagster_event.asset_key.to_string()
        if conn.execute(UPDATE_ASSET_KEY, values | {"where_asset_key": key}).rowcount:
            return
        try:
            conn.execute(INSERT_ASSET_KEY, values | {"asset_key": key})
        except IntegrityError:  # inserted by another writer since (not on SQLite, which runs one writer at a time)
            conn.execute(UPDATE_ASSET_KEY, values | {"where_asset_key": key})

    def _has_asset_key_index_cols_on_connection(self, conn: Any) -> bool:
        """Dagster reads the index's ``asset_keys`` columns (a reflection, ~0.1 ms) before storing every asset
        event; a column its migrations added is never dropped while an instance uses it (``has_table`` above)."""
        if not getattr(self, "_asset_key_index_cols", False):
            self._asset_key_index_cols = super()._has_asset_key_index_cols_on_connection(conn)
        return self._asset_key_index_cols


def _insert_event(conn: Any, row: dict[str, Any]) -> int | None:
    """Insert an event's row; its storage id."""
    inserted = conn.execute(INSERT_EVENT, row).inserted_primary_key
    return None if inserted is None else inserted[0]
