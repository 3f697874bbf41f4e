"""Which asset graph a built ``dg.Definitions`` holds: ``backfill_definitions`` registers each asset it builds, so
the CLI and the service find the graph of a loaded code location (also after ``Definitions.merge``)."""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from backfill_assets.engine.model.graph import AssetGraph

# The asset object is kept alongside its id: an id is only unique while its object lives.
_GRAPH_OF_ASSET: dict[int, tuple[dg.AssetsDefinition, AssetGraph]] = {}


def register_graph(built: Iterable[dg.AssetsDefinition], graph: AssetGraph) -> None:
    for asset_def in built:
        _GRAPH_OF_ASSET[id(asset_def)] = (asset_def, graph)


def graph_of(defs: dg.Definitions) -> AssetGraph | None:
    """The asset graph of a Definitions built with ``backfill_definitions``, or None."""
    for asset_def in defs.assets or ():
        found = _GRAPH_OF_ASSET.get(id(asset_def))
        if found is not None and found[0] is asset_def:
            return found[1]
    return None
