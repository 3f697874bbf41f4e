"""A transform and its audits ask for ``run`` and get the attempt's identity: the same version id the catalog gives
the version, its isolated location, and a way to record an engine's id with it. A side effect writes no version,
so asking for ``run`` there is refused when declared."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from backfill_assets import (
    BusinessCalendar,
    InvalidInput,
    RunContext,
    audit,
    backfill_definitions,
    backfills_for_instance,
    gated_asset,
    side_effect_asset,
)
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.engine_refs import EngineRefs
from tests.homes import fresh_home, shipped_storage

CALENDAR = BusinessCalendar("Europe/Berlin", "2024-01-01")
SEEN: dict[str, RunContext] = {}


@audit
def written_for_this_attempt(frame: pd.DataFrame, run: RunContext) -> bool:
    """The frame names the version its audit judges."""
    SEEN["audit"] = run
    return bool((frame["version_id"] == run.version_id).all())


@gated_asset(calendar=CALENDAR, audits=[written_for_this_attempt])
def labelled(run: RunContext) -> pd.DataFrame:
    """One row naming the attempt that computed it."""
    SEEN["transform"] = run
    run.report_engine_id("spark_application", f"application_{run.attempt_no}_0001")
    return pd.DataFrame({"version_id": [run.version_id], "location": [run.location]})


def test_the_transform_and_its_audits_get_the_attempt_s_identity(tmp_path, monkeypatch):
    fresh_home(tmp_path, monkeypatch)
    defs = backfill_definitions(assets=[labelled])
    SEEN.clear()
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=shipped_storage()) as instance:
        result = dg.materialize([defs.resolve_assets_def("labelled")], partition_key="2024-03-31", instance=instance)
        assert result.success
        version = backfills_for_instance(defs, instance).serving("labelled", "2024-03-31")
        refs = EngineRefs(backfills_for_instance(defs, instance).catalog).with_id("application_1_0001")
    dispose_all()
    run = SEEN["transform"]
    assert SEEN["audit"] == run and run.version_id == version.version_id and run.attempt_no == 1
    assert (run.asset, run.partition_key, run.dagster_run_id, run.lane) == ("labelled", "2024-03-31", result.run_id,
                                                                            "manual")
    assert Path(run.location) == Path(version.path).parent  # the attempt's own folder, where the gate wrote
    assert [r.version_id for r in refs] == [version.version_id]


def test_a_side_effect_asking_for_run_is_refused_when_declared():
    with pytest.raises(InvalidInput, match="notify: `run` is a gated asset's attempt"):
        side_effect_asset(calendar=CALENDAR, deps=[labelled], deliver=lambda payload: None, name="notify")(
            lambda labelled, run: {"n": len(labelled)}
        )
