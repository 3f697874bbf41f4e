"""Declaring an asset's config (``gated_asset(config=...)``): what is refused when the code location loads, each
with one line naming the asset and the field."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pydantic
import pytest

from backfill_assets import BusinessCalendar, InvalidInput, backfill_definitions, gated_asset, side_effect_asset

CALENDAR = BusinessCalendar("Europe/Berlin", "2024-01-01")


class Rates(dg.Config):
    fx_rate: float = 1.0


class NeedsRate(dg.Config):
    region: str = "eu"
    fx_rate: float


class ShadowsTheGate(dg.Config):
    partitions: str = "none"


class PlainSettings:
    fx_rate = 1.0


class PydanticOnly(pydantic.BaseModel):
    fx_rate: float = 1.0


def declare(config=None, name: str | None = None):
    def revenue(interval, config) -> pd.DataFrame:
        return pd.DataFrame({"fx": [config.fx_rate]})

    return gated_asset(calendar=CALENDAR, config=config, name=name)(revenue)


@pytest.mark.parametrize(
    "config, message",
    [
        (NeedsRate, "revenue: config field NeedsRate.fx_rate has no default; every field needs one"),
        (PlainSettings, "revenue: config= must be a Dagster Config class (class MyConfig(dg.Config): ...), "
                        "not PlainSettings"),
        (PydanticOnly, "revenue: config= must be a Dagster Config class"),
        ({"fx_rate": 1.0}, "revenue: config= must be a Dagster Config class (class MyConfig(dg.Config): ...), "
                           "not dict"),
        (Rates(), "revenue: config= takes the class Rates, not an instance of it"),
    ],
    ids=["required-field", "plain-class", "pydantic-model", "dict", "instance"],
)
def test_a_config_that_is_no_dagster_config_class_with_defaults_is_refused_when_declared(config, message):
    with pytest.raises(InvalidInput) as refused:
        declare(config)
    assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_a_transform_asking_for_config_without_declaring_one_is_refused():
    with pytest.raises(InvalidInput, match=r"^revenue: takes `config` but declares none; pass gated_asset"):
        declare(None)


@pytest.mark.parametrize("declared", ["transform", "audit", "side effect payload"])
def test_a_callable_asking_for_dagsters_context_is_refused_when_declared(declared):
    """``context`` is never passed (the step's context is the gate's own): refused at declaration, not at the
    first run."""
    from backfill_assets import audit, not_empty

    def revenue(interval, context) -> pd.DataFrame:
        return pd.DataFrame()

    def plain(interval) -> pd.DataFrame:
        return pd.DataFrame()

    @audit
    def sees_context(frame, context) -> bool:
        return True

    with pytest.raises(InvalidInput, match=r"^(revenue|plain|alert): a transform, audit or hook gets no `context`"):
        if declared == "transform":
            gated_asset(calendar=CALENDAR)(revenue)
        elif declared == "audit":
            gated_asset(calendar=CALENDAR, audits=[not_empty(), sees_context])(plain)
        else:
            side_effect_asset(calendar=CALENDAR, deps=["plain"], name="alert", deliver=lambda payload: None)(
                lambda plain, context: {})


def test_a_config_field_named_like_the_gates_own_is_refused_when_the_definitions_load():
    with pytest.raises(InvalidInput, match=r"^revenue: config field\(s\) partitions of ShadowsTheGate are the "
                                           r"library's own \(ChunkAssetConfig\); rename them$"):
        backfill_definitions(assets=[declare(ShadowsTheGate)])


def test_an_asset_named_like_a_library_conf_key_may_not_take_a_config():
    with pytest.raises(InvalidInput, match="may not be named like the library's own --conf key "
                                           "'handoff_window_seconds'"):
        declare(Rates, name="handoff_window_seconds")


def test_a_side_effect_asset_may_not_ask_for_config():
    def alert(interval, revenue, config) -> dict:
        return {}

    with pytest.raises(InvalidInput, match="^alert: `config` is for gated assets declared with config="):
        side_effect_asset(calendar=CALENDAR, deps=["revenue"], deliver=lambda payload: None)(alert)


def test_a_declared_config_is_the_engines_plain_field_list_and_validator():
    spec = declare(Rates).spec
    assert (spec.config.class_name, spec.config.fields) == ("Rates", ("fx_rate",))
    assert spec.config.normalize({}) == {"fx_rate": 1.0}
    assert spec.config.normalize({"fx_rate": 1.1}) == {"fx_rate": 1.1}
    with pytest.raises(InvalidInput, match=r'^revenue\.fx_rate: Value "x" of type'):
        spec.config.normalize({"fx_rate": "x"})
    assert "config" not in spec.resources  # a reserved argument, not a resource to provide
