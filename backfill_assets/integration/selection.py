"""Dagster's asset selection syntax (``+daily_revenue``, ``order_facts+``, ``key:raw_orders or key:order_facts``)
resolved against a code location: the assets a ``clear`` covers. Dagster parses and resolves; we only bound the
input and turn its errors into one line."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph

MAX_SELECTION_CHARS = 1000


def select_assets(defs: dg.Definitions, graph: AssetGraph, text: str) -> tuple[str, ...]:
    """The graph's assets that ``text`` selects, upstream first; an error names the known assets."""
    known = ", ".join(graph.names)
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"--select is empty; e.g. +daily_revenue, order_facts+, key:raw_orders (assets: {known})")
    if len(text) > MAX_SELECTION_CHARS or "\x00" in text:
        raise InvalidInput(f"--select is longer than {MAX_SELECTION_CHARS} characters or holds a NUL")
    try:
        keys = dg.AssetSelection.from_string(text.strip()).resolve(defs.resolve_asset_graph())
    except Exception as exc:  # noqa: BLE001 - Dagster raises several types for a bad string; all are the user's
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise InvalidInput(f"--select {text!r} is not a selection Dagster understands: {first}") from exc
    names = [key.to_user_string() for key in keys]
    selected = [name for name in names if name in graph]
    if not selected:
        raise InvalidInput(f"--select {text!r} selects no asset of this code location (assets: {known})")
    return tuple(graph.topological(selected))
