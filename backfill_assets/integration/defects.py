"""Deliberate defects, a plug-in for demos, drills and tests: ``with_defects`` gives gated assets a config that
spoils their output on chosen days, so a blocking check fails for real and the previous version keeps serving (or,
``kill_worker``, kills the process computing the day, as a step that takes its worker down).

Nothing else in the library knows of it: a defect reaches a step as the wrapped asset's own config (frozen in a
request's ``conf`` like any asset config, or given in the Launchpad as op config), the wrapped transform spoils the
frame it returns, and the gate audits that frame as it audits any other. Leave it out of a production code
location.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import signal
from dataclasses import replace
from enum import Enum
from typing import Any, Callable, Mapping, Optional

import dagster as dg
import pandas as pd
import pydantic

from backfill_assets.engine.model.asset_config import CONFIG_ARG
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import INTERVAL_ARG, parameter_names
from backfill_assets.integration.assets.user_config import declare_config
from backfill_assets.integration.declarations import BackfillAsset

DAY_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}")


class Defect(str, Enum):
    """What a defect does to a day's frame, and so which blocking check it fails."""

    drop_rows = "drop_rows"  # a tenth of the rows missing: row_count (and totals) fail
    duplicate_keys = "duplicate_keys"  # three rows twice: unique_key fails
    bad_schema = "bad_schema"  # a numeric column arrives as text: matches_schema fails
    # The process computing the day dies (SIGKILL), as a step that takes its worker down with it: a drill for
    # workers, not for checks. In an in-process run, that process is the caller's.
    kill_worker = "kill_worker"


class DefectConfig(dg.Config):
    """``defect`` spoils every interval the run computes; ``defect_days`` (day → defect) only the days named."""

    defect: Optional[Defect] = None
    defect_days: dict[str, str] = {}

    @pydantic.field_validator("defect_days")
    @classmethod
    def _known_days_and_defects(cls, days: dict[str, str]) -> dict[str, str]:
        for day, defect in days.items():
            if not DAY_PATTERN.fullmatch(day):
                raise ValueError(f"{day!r} is not a day (YYYY-MM-DD)")
            if defect not in Defect.__members__:
                raise ValueError(f"{defect!r} is not one of {', '.join(Defect.__members__)}")
        return days

    def defect_on(self, day: str) -> Defect | None:
        named = self.defect_days.get(day)
        return Defect(named) if named else self.defect


def with_defects(*assets: BackfillAsset) -> list[BackfillAsset]:
    """The same gated assets, each taking a ``DefectConfig`` beside its own config (a side-effect asset is
    returned unchanged: it has no frame to spoil)."""
    return [_with_defects(asset) if asset.spec.is_data_asset else asset for asset in assets]


def defect_conf(days: Mapping[str, Defect | str]) -> dict[str, Any]:
    """A wrapped asset's section of a request's conf: ``{"<asset>": defect_conf({"2022-10-17": "drop_rows"})}``."""
    return {"defect_days": {day: Defect(defect).value for day, defect in days.items()}}


def spoil(frame: pd.DataFrame, defect: Defect | None, schema: Mapping[str, str]) -> pd.DataFrame:
    """The frame as the defect spoils it (unchanged without one)."""
    if defect == Defect.drop_rows:
        return frame.iloc[: max(len(frame) - max(len(frame) // 10, 1), 0)].reset_index(drop=True)
    if defect == Defect.duplicate_keys:
        return pd.concat([frame, frame.head(3)], ignore_index=True)
    if defect == Defect.bad_schema:
        # A column silently changing type is the classic schema drift: numbers arriving as text.
        victim = next((c for c, t in schema.items() if t in ("float", "int")), frame.columns[-1])
        return frame.assign(**{victim: frame[victim].astype("string")})
    return frame


def _with_defects(asset: BackfillAsset) -> BackfillAsset:
    spec = asset.spec
    config_class = _config_with_defects(spec.name, asset.config_class)
    transform = _spoiling(spec.transform, dict(spec.schema))
    spec = replace(spec, transform=transform, config=declare_config(spec.name, config_class))
    return replace(asset, spec=spec, config_class=config_class)


def _config_with_defects(asset: str, own: type[dg.Config] | None) -> type[dg.Config]:
    if own is None:
        return DefectConfig
    clash = sorted(set(own.model_fields) & set(DefectConfig.model_fields))
    if clash:
        raise InvalidInput(f"{asset}: config field(s) {', '.join(clash)} of {own.__name__} are the defects' own")
    # DefectConfig first in the bases: pydantic then lists the asset's own fields first.
    return type(f"{own.__name__}WithDefects", (DefectConfig, own), {"__module__": own.__module__,
                                                                     "__doc__": own.__doc__})


def _spoiling(transform: Callable[..., Any] | None, schema: dict[str, str]) -> Callable[..., Any]:
    """The transform, taking ``interval`` and ``config`` too (passed on only if it asks for them), its frame spoilt
    by the day's defect. The signature is what the library reads to pass arguments by name."""
    if transform is None:
        raise InvalidInput("with_defects wraps gated assets, which have a transform")
    own = parameter_names(transform)
    signature = inspect.signature(transform)
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY)
             for name in (INTERVAL_ARG, CONFIG_ARG) if name not in own]

    @functools.wraps(transform)
    def spoiling(**given: Any) -> Any:
        if given[CONFIG_ARG].defect_on(given[INTERVAL_ARG].key) == Defect.kill_worker:
            os.kill(os.getpid(), signal.SIGKILL)
        frame = transform(**{name: value for name, value in given.items() if name in own})
        if not isinstance(frame, pd.DataFrame):
            return frame  # the gate refuses it, naming the transform
        return spoil(frame, given[CONFIG_ARG].defect_on(given[INTERVAL_ARG].key), schema)

    spoiling.__signature__ = signature.replace(parameters=[*_keyword(signature), *added])  # type: ignore[attr-defined]
    return spoiling


def _keyword(signature: inspect.Signature) -> list[inspect.Parameter]:
    """The transform's own parameters, all given by name (the library never passes arguments by position)."""
    return [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
