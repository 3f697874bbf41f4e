"""The PostgreSQL schedule storage of deploy/'s dagster.yaml files: dagster-postgres's, remembering the schema
questions it has had a yes to.

Dagster's PostgreSQL storages open a new connection for every call (``NullPool``), and the schedule storage asks
about its own schema before each read of a sensor's state (``get_instigator_state``, every daemon pass over every
sensor): is there an ``instigators`` table, a ``secondary_indexes`` table, and is the selector-id index built. Each
answer is a connection of its own, so one state read opened four: three questions and the read. A table or index
the storage's migrations made is never dropped while an instance uses it, so a yes is remembered for the process;
a no is asked again (a migration may run meanwhile), as Dagster asks.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from dagster_postgres import PostgresScheduleStorage

from .postgres_config import BuiltFromItsConfig


class PostgresScheduleStorageRememberingSchema(BuiltFromItsConfig, PostgresScheduleStorage):
    """``PostgresScheduleStorage`` (same configuration, same tables) answering a schema question it had a yes to
    without a connection. dagster.yaml::

        schedule_storage:
          module: backfill_assets.integration.runs.dagster_adapter.postgres_schedule_storage
          class: PostgresScheduleStorageRememberingSchema
          config:
            postgres_url:
              env: DAGSTER_PG_URL
    """

    def _yes_remembered(self, question: str, ask: Callable[[], bool]) -> bool:
        known: set[str] = self.__dict__.setdefault("_schema_yes", set())
        if question in known:
            return True
        answer = ask()
        if answer:
            known.add(question)
        return answer

    def has_instigators_table(self) -> bool:
        return self._yes_remembered("instigators", super().has_instigators_table)

    def has_secondary_index_table(self) -> bool:
        return self._yes_remembered("secondary_indexes", super().has_secondary_index_table)

    def has_built_index(self, migration_name: str) -> bool:
        return self._yes_remembered(f"index:{migration_name}", partial(super().has_built_index, migration_name))
