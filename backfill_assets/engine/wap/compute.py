"""Computing one interval of a data asset from its published inputs, by calling the asset's own transform."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from backfill_assets.engine.model.asset_config import CONFIG_ARG
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import INTERVAL_ARG, PREVIOUS_ARG, RUN_ARG, AssetGraph, call_with
from backfill_assets.engine.model.identity import parameter_name_of
from backfill_assets.engine.wap.frames import as_pandas
from backfill_assets.engine.wap.gate import Gate, NotPublished
from backfill_assets.engine.wap.run_context import run_context_of


@dataclass(frozen=True)
class Computed:
    frame: pd.DataFrame
    # What the transform was given (interval, upstream frames, previous, resources): the audits see the same.
    available: Mapping[str, Any]
    source_fingerprint: str | None = None


def compute(gate: Gate, graph: AssetGraph, resources: Mapping[str, Any], config: Any = None) -> Computed:
    """Read every input's published version (recorded), then run the transform on them.

    Upstream assets are read for the same interval; a depends-on-past asset also gets ``previous``, its own
    published version of the previous interval (None on the calendar's first day): a missing one is waited
    for, never computed around. An asset that declares a config gets ``config``, the object the run was given.
    Every one may ask for ``run``, the attempt's ``RunContext``.
    """
    spec = gate.spec
    key = gate.identity.partition_key
    calendar = graph.calendar
    available = published_inputs(gate, graph, resources)
    if spec.config is not None:
        available[CONFIG_ARG] = config
    fingerprint = None
    if spec.fingerprint is not None:
        fingerprint = str(call_with(spec.fingerprint, available, f"fingerprint of {spec.name}"))
    if spec.transform is None:
        raise InvalidInput(f"{spec.name} has no transform")
    returned = call_with(spec.transform, available, f"transform of {spec.name}")
    frame = as_pandas(returned, f"{spec.name} {calendar.interval(key).label}")
    return Computed(frame, available, fingerprint)


def published_inputs(gate: Gate, graph: AssetGraph, resources: Mapping[str, Any]) -> dict[str, Any]:
    """What a transform and its audits are given besides ``config``: the interval, the attempt's ``run``, each
    upstream asset's published version of the interval and a depends-on-past asset's ``previous`` (each read
    recorded as an input of the gate's version), and ``resources``. A registered file's audits get the same."""
    spec = gate.spec
    key = gate.identity.partition_key
    calendar = graph.calendar
    available: dict[str, Any] = {INTERVAL_ARG: calendar.interval(key), **resources}
    available[RUN_ARG] = run_context_of(gate)  # the attempt's identity, location and engine labels
    for upstream in spec.upstream:
        available[parameter_name_of(upstream)] = gate.read_published(upstream, key)
    if spec.depends_on_past:
        previous_key = calendar.previous_key(key)
        previous = None if previous_key is None else gate.read_published(spec.name, previous_key, required=False)
        if previous_key is not None and previous is None:
            raise NotPublished(
                f"{spec.name} {calendar.interval(key).label} depends on its previous day: {previous_key} has no "
                "published version"
            )
        available[PREVIOUS_ARG] = previous
    return available
