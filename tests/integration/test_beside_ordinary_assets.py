"""Gated assets beside a team's ordinary assets of any partitioning: the location loads, the library's jobs and
sensors touch only the library's assets, the ordinary assets run as before, and a plain asset handed to
``backfill_definitions`` is refused by its name with the way to merge it."""

from __future__ import annotations

import os
import subprocess
import sys

import dagster as dg
import pytest

from backfill_assets import backfill_definitions
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.integration.jobs import BACKFILL_JOB, PRODUCTION_JOB
from tests import mixed_project
from tests.mixed_project import LIBRARY, defs


def _asset_names(job: dg.JobDefinition) -> set[str]:
    return {k.to_user_string() for k in job.asset_layer.executable_asset_keys}


def test_a_location_with_ordinary_assets_of_every_partitioning_loads():
    dg.Definitions.validate_loadable(defs)
    repository = defs.get_repository_def()
    assert {PRODUCTION_JOB, BACKFILL_JOB} <= {job.name for job in repository.get_all_jobs()}


@pytest.mark.parametrize("job_name", [PRODUCTION_JOB, BACKFILL_JOB])
def test_the_library_jobs_select_only_the_library_assets_and_their_checks(job_name):
    job = defs.resolve_job_def(job_name)
    assert _asset_names(job) == set(LIBRARY)
    checked = {key.asset_key.to_user_string() for key in job.asset_layer.asset_graph.asset_check_keys}
    assert checked == set(LIBRARY)


def test_dagster_validates_the_mixed_location_in_its_own_process(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-m", "tests.mixed_project"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_ordinary_assets_materialize_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        assert dg.materialize([mixed_project.sites], instance=instance).success
        assert dg.materialize(
            [mixed_project.hourly_prices], partition_key="2024-03-31-01:00", instance=instance
        ).success
        key = dg.MultiPartitionKey({"date": "2024-03-31", "region": "north"})
        assert dg.materialize([mixed_project.usage_by_region], partition_key=key, instance=instance).success


def test_gated_assets_publish_beside_them(tmp_path, monkeypatch):
    from backfill_assets import backfills_for_instance

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        job = defs.resolve_job_def(BACKFILL_JOB)
        assert job.execute_in_process(partition_key="2024-03-31", instance=instance).success
        serving = backfills_for_instance(defs, instance).serving("daily_usage", "2024-03-31")
        assert (serving.state, serving.rows) == ("PUBLISHED", 3)


def test_a_plain_asset_in_backfill_definitions_is_refused_by_name_with_the_merge_line():
    with pytest.raises(InvalidInput) as refused:
        backfill_definitions(assets=[mixed_project.meter_readings, mixed_project.hourly_prices])
    message = str(refused.value)
    assert "hourly_prices" in message and "dg.Definitions.merge" in message
    assert "object at 0x" not in message


def test_a_function_in_backfill_definitions_is_refused_by_its_name():
    def orders():
        return None

    with pytest.raises(InvalidInput, match=r"^orders was not declared with @gated_asset"):
        backfill_definitions(assets=[mixed_project.meter_readings, orders])


def _job_backfill(job: str, partitions: list[str]) -> None:
    from backfill_assets.cli.daemon import dagster_bin

    subprocess.run(
        [dagster_bin("dagster"), "job", "backfill", "-m", "tests.mixed_project", "-j", job,
         "--partitions", ",".join(partitions), "--noprompt"],
        check=True, capture_output=True, timeout=120,
    )


def test_a_dagster_backfill_of_ordinary_assets_is_not_adopted_and_one_of_gated_assets_is(env):
    """The adoption sensor's own function on the instance the backfills were made on: the team's weekly job's
    backfill is none of the library's business; the production job's is adopted with the gated cells only."""
    from backfill_assets.engine.store.ledger import Ledger
    from backfill_assets.integration.api import asset_graph
    from backfill_assets.integration.sensors.adoption import adopt_and_track

    graph = asset_graph([mixed_project.meter_readings, mixed_project.daily_usage])
    repository = defs.get_repository_def()
    _job_backfill("team_weekly", ["2024-01-07"])
    assert adopt_and_track(graph, env.instance, repository, env.catalog) == ([], [], [])
    _job_backfill(PRODUCTION_JOB, ["2024-03-31"])
    [adopted], _, failed = adopt_and_track(graph, env.instance, repository, env.catalog)
    assert failed == []
    assert set(Ledger(env.catalog).get(adopted).spec.assets) == set(LIBRARY)
