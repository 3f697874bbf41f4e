"""The shipped PostgreSQL schedule storage reads a sensor's state on one connection: a schema question it had a yes
to is not asked again, where Dagster's own class opens a connection for each of three before every read. A real
PostgreSQL database, the storage blocks of deploy/postgres/dagster.yaml, a real sensor state."""

from __future__ import annotations

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml
from dagster._core.scheduler.instigation import InstigatorState, InstigatorStatus, InstigatorType

from backfill_assets.integration.runs.dagster_adapter.postgres_schedule_storage import (
    PostgresScheduleStorageRememberingSchema,
)
from tests.homes import DEPLOY_POSTGRES, deploy_postgres_instance

pytestmark = pytest.mark.postgres

DAGSTERS_OWN = {"module": "dagster_postgres.schedule_storage", "class": "PostgresScheduleStorage",
                "config": {"postgres_url": {"env": "DAGSTER_PG_URL"}}}


@pytest.fixture
def instance_with(pg_server, tmp_path, monkeypatch):
    """An instance on a fresh database with deploy/'s storage blocks, its schedule storage the one given."""
    made, instances = [], []

    def instance(schedule_storage: dict) -> dg.DagsterInstance:
        name = pg_server.create_database()
        made.append(name)
        instances.append(deploy_postgres_instance(pg_server.url_for(name), tmp_path / name, monkeypatch,
                                                  schedule_storage=schedule_storage))
        return instances[-1]

    yield instance
    for made_instance in instances:
        made_instance.dispose()
    for name in made:
        pg_server.drop_database(name)


def _connections_per_state_read(instance: dg.DagsterInstance) -> list[int]:
    """How many connections each of three reads of a stored sensor's state opened, and that each found it."""
    state = InstigatorState(_origin(), InstigatorType.SENSOR, InstigatorStatus.RUNNING)
    instance.schedule_storage.add_instigator_state(state)
    opened = []
    sa.event.listen(instance.schedule_storage._engine, "connect", lambda *_: opened.append(1))
    counts = []
    for _ in range(3):
        before = len(opened)
        found = instance.schedule_storage.get_instigator_state(state.instigator_origin_id, state.selector_id)
        assert found is not None and found.status == InstigatorStatus.RUNNING
        counts.append(len(opened) - before)
    return counts


def _origin():
    from dagster._core.remote_origin import InProcessCodeLocationOrigin, RemoteInstigatorOrigin, RemoteRepositoryOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    location = InProcessCodeLocationOrigin(LoadableTargetOrigin(python_file=__file__))
    return RemoteInstigatorOrigin(RemoteRepositoryOrigin(location, "__repository__"), "driver")


def test_a_sensors_state_is_read_on_one_connection_once_the_schema_was_seen(instance_with):
    shipped = instance_with(yaml.safe_load(DEPLOY_POSTGRES.read_text())["schedule_storage"])
    assert isinstance(shipped.schedule_storage, PostgresScheduleStorageRememberingSchema)
    assert _connections_per_state_read(shipped) == [1, 1, 1]  # the add's own questions had their yes already
    own = instance_with(DAGSTERS_OWN)
    assert _connections_per_state_read(own) == [4, 4, 4]


def test_a_no_is_asked_again(instance_with):
    storage = instance_with(yaml.safe_load(DEPLOY_POSTGRES.read_text())["schedule_storage"]).schedule_storage
    assert storage.has_built_index("no_such_migration") is False  # its secondary index table: a yes, remembered
    opened = []
    sa.event.listen(storage._engine, "connect", lambda *_: opened.append(1))
    assert storage.has_built_index("no_such_migration") is False
    assert len(opened) == 1  # the migration's row, asked again
    assert storage.has_built_index("no_such_migration") is False
    assert len(opened) == 2
