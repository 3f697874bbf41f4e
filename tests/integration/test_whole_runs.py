"""A run and its tags are added whole on the shipped PostgreSQL run storage: when the tags' insert fails (here a real
trigger refuses it, as a database restart between the two inserts did), no run is left behind that its run key
cannot find. Dagster's own class leaves one (if that starts failing, Dagster made the insert atomic and
``PostgresRunStorageAddingRunsWhole`` can go)."""

from __future__ import annotations

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml

from backfill_assets.integration.runs.dagster_adapter.postgres_run_storage import PostgresRunStorageAddingRunsWhole
from tests.homes import DEPLOY_POSTGRES, deploy_postgres_instance

pytestmark = pytest.mark.postgres

RUN_KEY = "req-20221101-0badc0de/2022-09-03/1"
# Refuses the tags of one run key, as the server going away refused them mid-tick.
REFUSE_TAGS = """
CREATE FUNCTION refuse_tags() RETURNS trigger AS $$
BEGIN
  IF NEW.value = '{key}' THEN RAISE EXCEPTION 'tags refused'; END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER refuse_tags BEFORE INSERT ON run_tags FOR EACH ROW EXECUTE FUNCTION refuse_tags();
"""


@pytest.fixture
def home_with(pg_server, tmp_path, monkeypatch):
    """A home whose run storage is the named block (the shipped one, or Dagster's), on a fresh database."""
    made = []

    def home(run_storage: dict) -> dg.DagsterInstance:
        name = pg_server.create_database()
        made.append(name)
        instance = deploy_postgres_instance(pg_server.url_for(name), tmp_path / name, monkeypatch,
                                            run_storage=run_storage)
        with sa.create_engine(pg_server.url_for(name)).begin() as conn:
            conn.execute(sa.text(REFUSE_TAGS.replace("{key}", RUN_KEY)))
        return instance

    yield home
    for name in made:
        pg_server.drop_database(name)


def _add_a_run_whose_tags_are_refused(instance: dg.DagsterInstance) -> None:
    run = dg.DagsterRun(job_name="backfill_partition", tags={"dagster/run_key": RUN_KEY, "backfill/request_id": "r"})
    with pytest.raises(Exception, match="tags refused"):
        instance.run_storage.add_run(run)


def test_the_shipped_run_storage_adds_a_run_and_its_tags_whole(home_with):
    shipped = yaml.safe_load(DEPLOY_POSTGRES.read_text())["run_storage"]
    instance = home_with(shipped)
    assert isinstance(instance.run_storage, PostgresRunStorageAddingRunsWhole)
    _add_a_run_whose_tags_are_refused(instance)
    assert instance.get_runs() == []  # nothing half-added: the tick's retry creates the run whole
    run = instance.run_storage.add_run(dg.DagsterRun(job_name="backfill_partition", tags={"backfill/lane": "x"}))
    assert instance.get_runs(dg.RunsFilter(tags={"backfill/lane": "x"})) == [run]


def test_dagsters_own_run_storage_leaves_a_run_no_tag_query_finds(home_with):
    instance = home_with({"module": "dagster_postgres.run_storage", "class": "PostgresRunStorage",
                          "config": {"postgres_url": {"env": "DAGSTER_PG_URL"}}})
    _add_a_run_whose_tags_are_refused(instance)
    [orphan] = instance.get_runs()
    assert orphan.tags["dagster/run_key"] == RUN_KEY  # the run body has its tags...
    assert instance.get_runs(dg.RunsFilter(tags={"dagster/run_key": RUN_KEY})) == []  # ...no tag query finds it
