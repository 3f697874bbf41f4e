"""Two code locations on one catalog that both declare ``daily_usage``: the first to write claims the name, the
second is refused before it writes anything, at every door, and the first's days keep serving its data."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from backfill_assets import AssetOwnedElsewhere, RequestInput, backfills_for_instance
from backfill_assets.integration.jobs import BACKFILL_JOB
from tests.locations import berlin, new_york

DAY = "2024-03-31"
REFUSAL = "daily_usage belongs to code location 'berlin' on this catalog; 'new_york' declares an asset of the same name"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.delenv("BACKFILL_CATALOG_URL", raising=False)
    monkeypatch.delenv("BACKFILL_WAREHOUSE", raising=False)
    return tmp_path


def _run(defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def(BACKFILL_JOB).execute_in_process(
        partition_key=DAY, instance=instance, raise_on_error=False
    )


def test_a_second_location_declaring_the_same_asset_is_refused_and_the_first_keeps_serving(home):
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        assert _run(berlin.defs, instance).success
        refused = _run(new_york.defs, instance)
        assert not refused.success
        failure = next(e for e in refused.all_events if e.is_step_failure)
        assert REFUSAL in failure.step_failure_data.error.message
        service = backfills_for_instance(berlin.defs, instance)
        [version] = service.versions("daily_usage", DAY)  # New York wrote nothing
        assert version.state == "PUBLISHED"
        assert service.read("daily_usage", DAY).frame["kwh"].tolist() == [berlin.KWH, berlin.KWH]


def test_a_request_of_the_second_location_is_refused_before_it_is_created(home):
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        assert _run(berlin.defs, instance).success
        york = backfills_for_instance(new_york.defs, instance)
        with pytest.raises(AssetOwnedElsewhere, match="belongs to code location 'berlin'"):
            york.create(RequestInput(assets=["daily_usage"], from_day=DAY, to_day=DAY, reason="mine"))
        assert york.list() == []


def test_the_cli_of_the_second_location_says_so_in_one_line(home):
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        assert _run(berlin.defs, instance).success
    done = subprocess.run(
        [str(Path(sys.executable).parent / "backfill-assets"), "-m", "tests.locations.new_york", "request", "create",
         "--assets", "daily_usage", "--from", DAY, "--to", DAY, "--reason", "mine"],
        capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: " + REFUSAL)


def test_a_location_is_named_by_its_top_level_package_unless_it_names_itself():
    from backfill_assets import graph_of
    from tests.mixed_project import defs as mixed

    assert graph_of(mixed).location == "tests"
    assert graph_of(berlin.defs).location == "berlin"


def test_a_location_named_explicitly_keeps_its_assets_when_its_module_moves(home):
    @berlin.gated_asset(calendar=berlin.BusinessCalendar("Europe/Berlin", "2024-01-01"), name="daily_usage")
    def moved(interval) -> pd.DataFrame:
        return pd.DataFrame({"sensor_id": ["a"], "kwh": [2.0]})

    first = berlin.backfill_definitions(assets=[moved], location="berlin")
    again = berlin.backfill_definitions(assets=[moved], location="berlin")
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        assert _run(first, instance).success
        assert _run(again, instance).success
