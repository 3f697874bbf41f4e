"""What a user naturally declares first, and what they get: frames of pandas, pyarrow and polars all publish the
same rows; Dagster partitions definitions, a wrong calendar, a second timezone and frames no run could store are
refused when the definitions load, naming the asset and the way forward."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from backfill_assets import BusinessCalendar, backfill_definitions, backfills_for_instance, gated_asset, not_empty
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.integration.jobs import BACKFILL_JOB

calendar = BusinessCalendar("Europe/Berlin", "2024-01-01")
ROWS = {"sensor_id": ["a", "b", "c"], "kwh": [1.5, 2.0, 2.5]}


@pytest.mark.parametrize(
    ("partitions_def", "says"),
    [
        (dg.HourlyPartitionsDefinition(start_date="2024-01-01-00:00"), "keep an hourly asset an ordinary Dagster"),
        (dg.WeeklyPartitionsDefinition(start_date="2024-01-01"), "keep a weekly asset an ordinary Dagster"),
        (dg.MonthlyPartitionsDefinition(start_date="2024-01-01"), "keep a monthly asset"),
        (dg.MultiPartitionsDefinition({"date": dg.DailyPartitionsDefinition(start_date="2024-01-01"),
                                       "region": dg.StaticPartitionsDefinition(["n", "s"])}),
         'make the region dimension a column of the daily asset and audit it with unique_key("region"'),
        (dg.StaticPartitionsDefinition(["n", "s"]), "partitioned by business day only"),
        (dg.DailyPartitionsDefinition(start_date="2024-01-01", timezone="Europe/Berlin"),
         "calendar=BusinessCalendar('Europe/Berlin', '2024-01-01')"),
    ],
)
def test_a_dagster_partitions_definition_is_refused_naming_the_asset_and_the_way(partitions_def, says):
    with pytest.raises(InvalidInput) as refused:
        gated_asset(calendar=calendar, partitions_def=partitions_def, name="usage")(lambda interval: pd.DataFrame())
    assert str(refused.value).startswith("usage: gated_asset takes no partitions_def; ")
    assert says in str(refused.value)


def test_a_partitions_definition_passed_as_the_calendar_is_refused_with_the_calendar_to_write():
    with pytest.raises(InvalidInput) as refused:
        @gated_asset(calendar=dg.DailyPartitionsDefinition(start_date="2024-02-01", timezone="America/Chicago"))
        def usage(interval) -> pd.DataFrame:
            return pd.DataFrame(ROWS)
    assert str(refused.value) == (
        "usage: calendar must be a BusinessCalendar, not DailyPartitionsDefinition; its days are a BusinessCalendar: "
        "calendar=BusinessCalendar('America/Chicago', '2024-02-01')"
    )
    with pytest.raises(InvalidInput, match=r"^usage: calendar must be a BusinessCalendar, not HourlyPartitions"):
        gated_asset(calendar=dg.HourlyPartitionsDefinition(start_date="2024-01-01-00:00"), name="usage")(
            lambda interval: pd.DataFrame()
        )


def test_a_second_timezone_in_one_location_points_to_a_second_code_location():
    berlin = gated_asset(calendar=calendar, name="berlin_usage")(lambda interval: pd.DataFrame(ROWS))
    chicago = gated_asset(calendar=BusinessCalendar("America/Chicago", "2024-01-01"), name="chicago_usage")(
        lambda interval: pd.DataFrame(ROWS)
    )
    with pytest.raises(InvalidInput, match="a second code location"):
        backfill_definitions(assets=[berlin, chicago])


@pytest.mark.parametrize("annotation", [dict, pl.LazyFrame, type(None), list])
def test_a_transform_annotated_to_return_what_no_run_can_store_is_refused_when_declared(annotation):
    def usage(interval):
        return ROWS

    usage.__annotations__["return"] = annotation
    with pytest.raises(InvalidInput, match=r"^usage: the transform is annotated to return .*; it must return a "
                                           r"pandas DataFrame, a pyarrow Table or a polars DataFrame$"):
        gated_asset(calendar=calendar)(usage)


def _frames() -> dict[str, object]:
    return {"pandas": pd.DataFrame(ROWS), "pyarrow": pa.table(ROWS), "polars": pl.DataFrame(ROWS)}


@pytest.mark.parametrize("kind", ["pandas", "pyarrow", "polars"])
def test_pandas_pyarrow_and_polars_frames_publish_the_same_rows(kind, tmp_path, monkeypatch):
    @gated_asset(calendar=calendar, audits=[not_empty()], name="usage")
    def usage(interval):
        return _frames()[kind]

    defs = backfill_definitions(assets=[usage])
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        assert defs.resolve_job_def(BACKFILL_JOB).execute_in_process(
            partition_key="2024-03-31", instance=instance).success
        service = backfills_for_instance(defs, instance)
        assert service.serving("usage", "2024-03-31").state == "PUBLISHED"
        read = pd.read_parquet(service.serving("usage", "2024-03-31").path)
        assert read[["sensor_id", "kwh"]].to_dict("list") == ROWS


@pytest.mark.parametrize(
    ("returned", "named"),
    [(pl.DataFrame(ROWS).lazy(), "polars.LazyFrame (call .collect() on it)"), ([1, 2], "list")],
)
def test_a_frame_no_run_can_store_fails_the_run_naming_its_type(returned, named, tmp_path, monkeypatch):
    @gated_asset(calendar=calendar, name="usage")
    def usage(interval):
        return returned

    defs = backfill_definitions(assets=[usage])
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        result = defs.resolve_job_def(BACKFILL_JOB).execute_in_process(
            partition_key="2024-03-31", instance=instance, raise_on_error=False)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure)
        message = failure.step_failure_data.error.message
        assert f"the transform returned a {named}; it must return a pandas DataFrame, a pyarrow Table or a polars " \
               "DataFrame" in message


def test_a_gated_asset_runs_after_an_ordinary_asset_and_records_its_input_as_not_versioned(tmp_path, monkeypatch):
    raw_events = dg.AssetSpec(["raw", "events"])

    @gated_asset(calendar=calendar, deps=[dg.AssetKey(["raw", "events"])], audits=[not_empty()], name="usage")
    def usage(interval):
        return pd.DataFrame(ROWS)

    defs = dg.Definitions.merge(backfill_definitions(assets=[usage]), dg.Definitions(assets=[raw_events]))
    graph = defs.resolve_asset_graph()
    assert dg.AssetKey(["raw", "events"]) in graph.get(dg.AssetKey("usage")).parent_keys
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        assert defs.resolve_job_def(BACKFILL_JOB).execute_in_process(
            partition_key="2024-03-31", instance=instance).success
        serving = backfills_for_instance(defs, instance).serving("usage", "2024-03-31")
        assert serving.input_versions == {"raw/events/2024-03-31": "not versioned"}


def test_an_ordinary_dependency_is_not_a_transform_parameter():
    with pytest.raises(InvalidInput, match=r"^usage: raw/events is an ordinary Dagster asset, an ordering dependency "
                                           r"whose data is not versioned; read it in the transform through a resource"):
        @gated_asset(calendar=calendar, deps=[dg.AssetKey(["raw", "events"])], name="usage")
        def usage(interval, events):
            return pd.DataFrame(ROWS)


def test_a_name_that_is_no_gated_asset_says_how_to_depend_on_an_ordinary_asset():
    usage = gated_asset(calendar=calendar, deps=["raw_events"], name="usage")(lambda interval: pd.DataFrame(ROWS))
    with pytest.raises(InvalidInput, match=r"deps=\[dg.AssetKey\('raw_events'\)\]"):
        backfill_definitions(assets=[usage])
    meters = gated_asset(calendar=calendar, name="meters")(lambda interval: pd.DataFrame(ROWS))
    typo = gated_asset(calendar=calendar, deps=["meter"], name="other")(lambda interval: pd.DataFrame(ROWS))
    with pytest.raises(InvalidInput, match="did you mean 'meters'"):
        backfill_definitions(assets=[meters, typo])
