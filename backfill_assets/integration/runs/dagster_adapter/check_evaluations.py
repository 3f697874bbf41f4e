"""A check evaluation stored in the index in one transaction, its event serialized once.

Dagster's SQLite event log mirrors a run's check evaluation into the index in two transactions: the event's row,
then the row of ``asset_check_executions`` (the update of the row its planned event made and, when there is none,
an insert), serializing the event again for each statement. A chunk run's op plans no check evaluation (an op job
has no check specs; the evaluations are reported per day, ``dashboard.day_events``), so each of its five
evaluations per gated asset-day was serialized three times and committed to the index twice (~0.5 ms each
serialization, ~0.2 ms each commit). Here the event is serialized once for the execution row, and both index rows
are one transaction. A planned evaluation (one per selected check at every asset run's start) goes the same way:
Dagster stores its event, then inserts its ``PLANNED`` row in a second transaction, building the insert and
serializing the event again. The rows written are Dagster's, column for column
(``tests/integration/test_sqlite_storage.py`` compares them with Dagster's own class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import dagster as dg
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluationPlanned
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable
from dagster._serdes import serialize_value
from sqlalchemy import bindparam

if TYPE_CHECKING:  # the class this mixin is placed before
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage as _Base
else:
    _Base = object


def _update_execution(partitioned: bool) -> Any:
    """The update of a run's planned row of one check and partition, built once (as Dagster's event inserts are,
    ``event_store.py``); the columns set are those the execution gives, the row's key its ``where_`` values."""
    row = AssetCheckExecutionsTable.c
    same_partition = row.partition == bindparam("where_partition") if partitioned else row.partition.is_(None)
    return AssetCheckExecutionsTable.update().where(
        row.asset_key == bindparam("where_asset_key"), row.check_name == bindparam("where_check_name"),
        row.run_id == bindparam("where_run_id"), same_partition,
    )


UPDATE_EXECUTION = {partitioned: _update_execution(partitioned) for partitioned in (False, True)}
INSERT_EXECUTION = AssetCheckExecutionsTable.insert()


class StoresCheckEvaluationsSerializedOnce(_Base):
    """Dagster's ``_update_asset_check_evaluation`` (update the planned row, else insert one; both in one
    transaction, as Dagster's), the event serialized once for both statements; ``_store_check_execution`` does the
    same on a connection whose transaction is already open (the one that mirrored the event); ``_store_planned_check``
    stores a planned evaluation's row there too."""

    def _update_asset_check_evaluation(self, event: dg.EventLogEntry, event_id: int | None) -> None:
        with self.index_connection() as conn:
            updated = self._store_check_execution(conn, event, event_id)
        refuse_duplicates(event, updated)

    def _store_check_execution(
        self, conn: Any, event: dg.EventLogEntry, event_id: int | None, serialized: str | None = None
    ) -> int:
        """Record a run's evaluation in ``asset_check_executions`` on ``conn``: the rows updated or inserted (more
        than one is Dagster's invariant broken, raised by the caller once the transaction is committed, as
        Dagster's own raises after its commit). ``serialized``: the event as its event-log row holds it, the same
        text Dagster writes here."""
        evaluation = cast(dg.AssetCheckEvaluation, event.get_dagster_event().event_specific_data)
        statuses = AssetCheckExecutionRecordStatus
        status = statuses.SUCCEEDED if evaluation.passed else statuses.FAILED
        target, partition = evaluation.target_materialization_data, evaluation.partition
        values = {
            "execution_status": status.value,
            "evaluation_event": serialize_value(event) if serialized is None else serialized,
            "evaluation_event_timestamp": self._event_insert_timestamp(event),  # Dagster's: UTC without a zone
            "evaluation_event_storage_id": event_id,
            "materialization_event_storage_id": target.storage_id if target else None,
            "partition": partition,
        }
        key = {"asset_key": evaluation.asset_key.to_string(), "check_name": evaluation.check_name,
               "run_id": event.run_id}
        where = {f"where_{name}": value for name, value in key.items()} | {"where_partition": partition}
        updated = conn.execute(UPDATE_EXECUTION[partition is not None], values | where).rowcount
        if updated == 0:  # no planned row: an op job's evaluation, or a step launcher's
            updated = conn.execute(INSERT_EXECUTION, key | values).rowcount
        return updated

    def _store_planned_check(self, conn: Any, event: dg.EventLogEntry, event_id: int | None, serialized: str) -> None:
        """Dagster's ``_store_asset_check_evaluation_planned`` on ``conn`` (the transaction that mirrored the planned
        event): a ``PLANNED`` row per partition planned, the event as its event-log row holds it."""
        planned = cast(AssetCheckEvaluationPlanned, event.get_dagster_event().event_specific_data)
        partitions = planned.partitions_subset.get_partition_keys() if planned.partitions_subset else [None]
        conn.execute(INSERT_EXECUTION, [
            {"asset_key": planned.asset_key.to_string(), "check_name": planned.check_name, "partition": partition,
             "run_id": event.run_id, "execution_status": AssetCheckExecutionRecordStatus.PLANNED.value,
             "evaluation_event": serialized, "evaluation_event_timestamp": self._event_insert_timestamp(event),
             "evaluation_event_storage_id": event_id}
            for partition in partitions
        ])


def refuse_duplicates(event: dg.EventLogEntry, updated: int) -> None:
    """Dagster's error when one evaluation updated several planned rows (duplicate planned events)."""
    if updated > 1:
        evaluation = cast(dg.AssetCheckEvaluation, event.get_dagster_event().event_specific_data)
        raise dg.DagsterInvariantViolationError(
            f"Updated {updated} rows for asset check evaluation {evaluation.asset_check_key} "
            "as a result of duplicate AssetCheckPlanned events."
        )

