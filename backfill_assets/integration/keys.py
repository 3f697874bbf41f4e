"""An asset's name as the library keeps it, and as Dagster keys it.

The catalog, the warehouse, the CLI and every record name an asset by its key as Dagster writes it for people
(``AssetKey.to_user_string``): "daily_usage", or "berlin/daily_usage" with a key prefix. Dagster wants the key
itself, and a node (op) name without "/".
"""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model.identity import table_name_of


def asset_key(name: str) -> dg.AssetKey:
    """The Dagster key of an asset the library names ``name`` ("berlin/daily_usage" → AssetKey(["berlin", ...]))."""
    return dg.AssetKey.from_user_string(name)


def node_name(name: str) -> str:
    """The op an asset's step runs as: its key's segments joined by "__", as Dagster names a prefixed asset's op."""
    return table_name_of(name)
