"""Ordinary Dagster assets where the gated-asset API meets them: refused in ``backfill_definitions(assets=...)`` by
name with the merge line to use, and accepted in ``gated_asset(deps=...)`` as ordering dependencies."""

from __future__ import annotations

from collections.abc import Sequence

import dagster as dg

from backfill_assets.engine.model.errors import InvalidInput


def not_ours(item: object) -> str:
    """Why ``item`` is refused in ``assets=[...]``, named as the user named it, with the way to keep it."""
    if isinstance(item, (dg.AssetsDefinition, dg.AssetSpec)):
        keys = item.keys if isinstance(item, dg.AssetsDefinition) else [item.key]
        named = ", ".join(k.to_user_string() for k in keys)
        return (f"asset {named} is an ordinary Dagster asset, not a gated one: keep it beside the gated assets with "
                f"defs = dg.Definitions.merge(backfill_definitions(assets=[...gated...]), "
                f"dg.Definitions(assets=[{named}]))")
    name = getattr(item, "__name__", None) or type(item).__name__
    return (f"{name} was not declared with @gated_asset or @side_effect_asset; backfill_definitions(assets=[...]) "
            "takes only those (ordinary assets go in dg.Definitions.merge)")


def is_ordinary(dep: object) -> bool:
    return isinstance(dep, (dg.AssetKey, dg.AssetsDefinition, dg.AssetSpec))


def ordinary_deps(asset: str, deps: Sequence[object], parameters: Sequence[str]) -> tuple[str, ...]:
    """The keys of the ordinary Dagster assets in ``deps``: ordering dependencies, whose data the library does not
    version, so a transform cannot take one as a parameter (it would read unaudited, unpinned data)."""
    keys: list[dg.AssetKey] = []
    for dep in deps:
        if isinstance(dep, dg.AssetKey):
            keys.append(dep)
        elif isinstance(dep, dg.AssetSpec):
            keys.append(dep.key)
        elif isinstance(dep, dg.AssetsDefinition):
            keys.extend(dep.keys)
    for key in keys:
        if key.path[-1] in parameters:
            raise InvalidInput(
                f"{asset}: {key.to_user_string()} is an ordinary Dagster asset, an ordering dependency whose data is "
                f"not versioned; read it in the transform through a resource, not as the parameter {key.path[-1]!r}"
            )
    return tuple(dict.fromkeys(k.to_user_string() for k in keys))
