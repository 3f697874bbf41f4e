"""A request's ``conf`` sections per asset: checked against each asset's config schema when it is created.

``conf`` layout: the library's own key (``handoff_window_seconds``) and, per asset the request
may run that declares a config (a selected one, or one its ``downstream`` cascade or handoff reaches), that
asset's fields::

    {"handoff_window_seconds": 3600, "order_facts": {"usd_to_cny": 7.3}}
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from backfill_assets.engine.model.errors import InvalidField, InvalidInput
from backfill_assets.engine.model.graph import AssetGraph


def validate_asset_sections(
    graph: AssetGraph, conf: Mapping[str, Any], selected: Iterable[str], library_keys: Iterable[str],
    reach: Iterable[str] = (),
) -> dict[str, Any]:
    """``conf`` with each asset section validated against that asset's schema and normalized (defaults filled),
    so the request freezes exactly what its runs are given; the library's own keys pass through unchanged.

    ``reach``: the assets beyond ``selected`` whose cells the request may add (its cascade), which run with the
    same conf. Every error is one line naming the key, the asset or the field, and what is allowed."""
    library = tuple(library_keys)
    selected_names = tuple(selected)
    chosen = tuple(dict.fromkeys([*selected_names, *reach]))
    configurable = [a for a in chosen if graph[a].config is not None]
    cascaded = [a for a in chosen if a not in selected_names]
    checked: dict[str, Any] = {}
    for key, section in conf.items():
        if key in library:
            checked[key] = section
            continue
        if key not in graph:
            allowed = ", ".join(library) + (
                f", or a selected asset's config: {', '.join(configurable)}"
                if configurable
                else " (no selected asset declares a config)"
            )
            raise InvalidField("{conf} has unknown key {key!r}; allowed: {allowed}", key=key, allowed=allowed)
        if key not in chosen:
            raise InvalidField(
                "{conf} names asset {key!r}, which this request does not run ({assets} {selected}{cascading})",
                key=key, selected=",".join(selected_names),
                cascading=f", cascading to {','.join(cascaded)}" if cascaded else "",
            )
        schema = graph[key].config
        if schema is None:
            others = f"; configurable: {', '.join(configurable)}" if configurable else ""
            raise InvalidField("{conf} names asset {key!r}, which declares no config{others}", key=key, others=others)
        fields = ", ".join(schema.fields)
        if not isinstance(section, dict):
            raise InvalidField("{conf} {key} must be an object of its config fields ({names})", key=key, names=fields)
        unknown = [name for name in section if name not in schema.fields]
        if unknown:
            raise InvalidField(
                "{conf} {key} has unknown field(s) {unknown}; {schema} allows: {names}", key=key,
                unknown=", ".join(repr(u) for u in unknown), schema=schema.class_name, names=fields,
            )
        try:
            checked[key] = schema.normalize(section)
        except InvalidInput as exc:
            raise InvalidField("{conf} {why}", why=str(exc)) from exc
    return checked
