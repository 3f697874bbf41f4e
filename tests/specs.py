"""Request specs for tests that plan or store a request without a surface: validated by the same ``build_spec``
the service calls (tests name assets and side effects comma-separated, as the CLI takes them)."""

from __future__ import annotations

from typing import Any

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.request_input import RequestInput, build_spec, parse_asset_list
from backfill_assets.engine.model.request_model import RequestSpec


def spec_of(
    graph: AssetGraph, newest: str | None, *, assets: str, first: str, last: str, **options: Any
) -> RequestSpec:
    if isinstance(options.get("allow_side_effects"), str):
        options["allow_side_effects"] = parse_asset_list(options["allow_side_effects"])
    asked = RequestInput(assets=parse_asset_list(assets), from_day=first, to_day=last, **options)
    return build_spec(graph, newest, asked)
