"""Dagster's asset selection syntax (``+daily_revenue``, ``order_facts+``, ``key:raw_orders or key:order_facts``)
resolved against a code location: the assets a ``clear`` covers. Dagster parses and resolves; we only bound the
input and turn its errors into one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dagster as dg

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.graph import AssetGraph

MAX_SELECTION_CHARS = 1000


def select_assets(dagster_graph: Any, graph: AssetGraph, text: str) -> tuple[str, ...]:
    """The graph's assets that ``text`` selects in Dagster's asset graph (``defs.resolve_asset_graph()``, or the
    code location's ``AssetsDefinition``s), upstream first; an error names the known assets."""
    known = ", ".join(graph.names)
    if not isinstance(text, str) or not text.strip():
        raise InvalidField("{select} is empty; e.g. +daily_revenue, order_facts+, key:raw_orders (assets: {known})",
                           known=known)
    if len(text) > MAX_SELECTION_CHARS or "\x00" in text:
        raise InvalidField("{select} is longer than {limit} characters or holds a NUL", limit=MAX_SELECTION_CHARS)
    try:
        keys = dg.AssetSelection.from_string(text.strip()).resolve(dagster_graph)
    except Exception as exc:  # noqa: BLE001 - Dagster raises several types for a bad string; all are the user's
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InvalidField("{select} {value!r} is not a selection Dagster understands: {reason}", value=text,
                           reason=first) from exc
    names = [key.to_user_string() for key in keys]
    selected = [name for name in names if name in graph]
    if not selected:
        raise InvalidField("{select} {value!r} selects no asset of this code location (assets: {known})",
                           value=text, known=known)
    return tuple(graph.topological(selected))


def selector_of(definitions: dg.Definitions, graph: AssetGraph) -> Callable[[str], tuple[str, ...]]:
    """What the service resolves a clear's selection with, for a code location's definitions."""
    return lambda text: select_assets(definitions.resolve_asset_graph(), graph, text)
