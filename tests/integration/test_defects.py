"""The defects plug-in (``backfill_assets.defects``): wrapped gated assets take ``defect`` / ``defect_days`` in
their config, a spoilt day is rejected by the check made to catch it with the previous version still serving, and
bad defects are refused before anything is written. Real runs on a throwaway instance, as a user tests an asset."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from backfill_assets import (
    BusinessCalendar,
    InvalidInput,
    RequestInput,
    backfill_definitions,
    backfills_for_instance,
    gated_asset,
    row_count,
    side_effect_asset,
    unique_key,
)
from backfill_assets.defects import DefectConfig, defect_conf, with_defects

CALENDAR = BusinessCalendar("Europe/Berlin", "2024-01-01")
DAY, OTHER_DAY = "2024-01-02", "2024-01-03"


class Scale(dg.Config):
    factor: int = 1


@gated_asset(calendar=CALENDAR, primary_key=("n",), audits=[row_count(lambda: 10), unique_key()])
def numbers() -> pd.DataFrame:
    """Takes neither ``interval`` nor ``config``: the wrapper takes them for it."""
    return pd.DataFrame({"n": range(10)})


@gated_asset(calendar=CALENDAR, deps=[numbers], primary_key=("n",), audits=[unique_key()], config=Scale)
def scaled(numbers: pd.DataFrame, config: Scale) -> pd.DataFrame:
    return numbers.assign(n=numbers["n"] * config.factor)


@side_effect_asset(calendar=CALENDAR, deps=[scaled], deliver=lambda payload: None)
def notice(scaled: pd.DataFrame) -> dict:
    return {"rows": len(scaled)}


WRAPPED = with_defects(numbers, scaled, notice)
DEFS = backfill_definitions(assets=WRAPPED)


@pytest.fixture
def instance(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # the catalog and the warehouse live under it
    for name in ("BACKFILL_CATALOG_URL", "BACKFILL_WAREHOUSE"):
        monkeypatch.delenv(name, raising=False)
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        yield instance


def _materialize(instance, day: str, config: dict | None = None) -> bool:
    assets = [DEFS.resolve_assets_def("numbers"), DEFS.resolve_assets_def("scaled")]
    run_config = {"ops": {"numbers": {"config": config}}} if config else None
    return dg.materialize(assets, partition_key=day, instance=instance, run_config=run_config,
                          raise_on_error=False).success


def test_the_wrapped_assets_take_the_defect_fields_beside_their_own_and_a_side_effect_is_left_as_it_is():
    by_name = {asset.name: asset for asset in WRAPPED}
    assert by_name["numbers"].config_class is DefectConfig
    assert list(by_name["scaled"].config_class.model_fields) == ["factor", "defect", "defect_days"]
    assert by_name["notice"] is notice
    assert DEFS.resolve_job_def("__ASSET_JOB") is not None


def test_a_config_field_named_like_a_defect_field_is_refused_when_wrapped():
    class Clashing(dg.Config):
        defect: str = "none"

    clashing = gated_asset(calendar=CALENDAR, config=Clashing, name="clashing")(lambda config: pd.DataFrame())
    with pytest.raises(InvalidInput, match=r"^clashing: config field\(s\) defect of Clashing are the defects' own"):
        with_defects(clashing)


def test_a_spoilt_day_is_rejected_by_its_check_and_the_previous_version_keeps_serving(instance):
    backfills = backfills_for_instance(DEFS, instance)
    assert _materialize(instance, DAY)
    first = backfills.serving("numbers", DAY)

    assert not _materialize(instance, DAY, {"defect_days": {DAY: "duplicate_keys"}})
    latest = backfills.versions("numbers", DAY)[-1]
    assert latest.state == "REJECTED" and "primary_key" in latest.error
    assert backfills.serving("numbers", DAY).version_id == first.version_id

    # defect_days spoils only the days it names; `defect` spoils every day of the run.
    assert _materialize(instance, OTHER_DAY, {"defect_days": {DAY: "drop_rows"}})
    assert not _materialize(instance, OTHER_DAY, {"defect": "drop_rows"})
    assert "row_count" in backfills.versions("numbers", OTHER_DAY)[-1].error


@pytest.mark.parametrize("section, message", [
    ({"defect_days": {DAY: "explode"}}, "'explode' is not one of drop_rows, duplicate_keys, bad_schema"),
    ({"defect_days": {"../x": "drop_rows"}}, "'../x' is not a day (YYYY-MM-DD)"),
    ({"defect": "corrupt_file"}, "numbers.defect"),
])
def test_a_bad_defect_in_a_requests_conf_is_refused_naming_the_field_and_writes_nothing(instance, section, message):
    backfills = backfills_for_instance(DEFS, instance)
    asked = RequestInput(assets=["numbers"], from_day=DAY, to_day=DAY, conf={"numbers": section})
    with pytest.raises(InvalidInput, match=r"numbers\.") as refused:
        backfills.create(asked)
    assert message in str(refused.value)
    assert backfills.list() == []


def test_defect_conf_is_a_wrapped_assets_section_of_a_requests_conf(instance):
    backfills = backfills_for_instance(DEFS, instance)
    conf = {"numbers": defect_conf({DAY: "drop_rows"})}
    spec = backfills.spec(RequestInput(assets=["numbers"], from_day=DAY, to_day=DAY, conf=conf))
    assert spec.conf == {"numbers": {"defect": None, "defect_days": {DAY: "drop_rows"}}}
