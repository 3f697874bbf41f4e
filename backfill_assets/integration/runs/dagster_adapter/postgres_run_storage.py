"""The PostgreSQL run storage of deploy/'s dagster.yaml files: dagster-postgres's, adding a run and its tags in one
transaction.

Dagster inserts a run's row and then its tags on an autocommit connection (``SqlRunStorage._core_add_run``). A
database restart between the two leaves a run without tag rows: its run body still carries the tags (the run's
steps see its request), but every tag query misses it — the run-key lookup of a sensor's retried tick, the
driver's runs of a request — so the same cell was requested again under the same run key and published twice.
Here both inserts commit together, or neither does and the tick's retry creates the run whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from dagster._core.errors import DagsterRunAlreadyExists
from dagster._core.storage.runs.schema import RunsTable, RunTagsTable
from dagster_postgres import PostgresRunStorage

from .postgres_config import BuiltFromItsConfig


class PostgresRunStorageAddingRunsWhole(BuiltFromItsConfig, PostgresRunStorage):
    """``PostgresRunStorage`` (same configuration, same tables). dagster.yaml::

        run_storage:
          module: backfill_assets.integration.runs.dagster_adapter.postgres_run_storage
          class: PostgresRunStorageAddingRunsWhole
          config:
            postgres_url:
              env: DAGSTER_PG_URL
    """

    def _core_add_run(self, col_values: dict[str, Any], tags: Mapping[str, str]) -> None:
        with self.connect() as conn:
            # The storage's engine autocommits every statement; this connection runs one transaction instead.
            conn = conn.execution_options(isolation_level="READ COMMITTED")
            with conn.begin():
                try:
                    conn.execute(RunsTable.insert().values(**col_values))
                except sa.exc.IntegrityError as exc:
                    raise DagsterRunAlreadyExists from exc
                if tags:
                    rows = [dict(run_id=col_values["run_id"], key=k, value=v) for k, v in tags.items()]
                    conn.execute(RunTagsTable.insert(), rows)
