"""An asset's own run config, as the engine sees it.

A gated asset may declare a config (in the public API, a Dagster ``Config`` class). The engine never sees that
class: the integration layer turns it into an ``AssetConfig`` — the field names a request may give and a
``normalize`` callable — so a request's ``--conf`` is validated up front (``run_conf``) with no Dagster import.
Every field has a default, so a run given no conf (production, a backfill launched from Dagster) runs with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

# The parameter name under which a transform, its audits and its fingerprint receive the asset's config object.
CONFIG_ARG = "config"


@dataclass(frozen=True)
class AssetConfig:
    """An asset's config schema as plain data."""

    class_name: str  # the user's class, for messages
    fields: tuple[str, ...]  # the keys a request's conf may give for the asset, in declaration order
    # The given fields validated and completed with every default, in the form a run config takes; raises
    # InvalidInput("<asset>.<field>: <what is wrong>") on a wrong type. Unknown fields are refused before it runs.
    normalize: Callable[[Mapping[str, Any]], dict[str, Any]]
