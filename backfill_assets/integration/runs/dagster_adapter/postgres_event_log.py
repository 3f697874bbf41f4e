"""The PostgreSQL event log of deploy/'s dagster.yaml files: dagster-postgres's, giving a pool slot freed while a
step registers for it to that step (``pool_claims.py``)."""

from __future__ import annotations

from dagster_postgres import PostgresEventLogStorage

from .pool_claims import AssignsFreedPoolSlots
from .postgres_config import postgres_storage_args


class PostgresEventLogAssigningFreedSlots(AssignsFreedPoolSlots, PostgresEventLogStorage):
    """``PostgresEventLogStorage`` (same configuration, same tables). dagster.yaml, beside Dagster's own
    ``run_storage`` and ``schedule_storage`` blocks for PostgreSQL::

        event_log_storage:
          module: backfill_assets.integration.runs.dagster_adapter.postgres_event_log
          class: PostgresEventLogAssigningFreedSlots
          config:
            postgres_url:
              env: DAGSTER_PG_URL
    """

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        # dagster-postgres builds its own class here, not ``cls``.
        return cls(inst_data=inst_data, **postgres_storage_args(config_value))
