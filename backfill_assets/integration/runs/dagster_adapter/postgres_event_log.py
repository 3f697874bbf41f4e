"""The PostgreSQL event log of deploy/'s dagster.yaml files: dagster-postgres's, giving a pool slot freed while a
step registers for it to that step (``pool_claims.py``)."""

from __future__ import annotations

from dagster_postgres import PostgresEventLogStorage

from .pool_claims import AssignsFreedPoolSlots
from .postgres_config import BuiltFromItsConfig


class PostgresEventLogAssigningFreedSlots(BuiltFromItsConfig, AssignsFreedPoolSlots, PostgresEventLogStorage):
    """``PostgresEventLogStorage`` (same configuration, same tables). dagster.yaml, beside Dagster's own
    ``run_storage`` and ``schedule_storage`` blocks for PostgreSQL::

        event_log_storage:
          module: backfill_assets.integration.runs.dagster_adapter.postgres_event_log
          class: PostgresEventLogAssigningFreedSlots
          config:
            postgres_url:
              env: DAGSTER_PG_URL
    """
