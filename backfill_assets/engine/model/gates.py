"""The gates an asset declares beside the request's own ``max_active``: the Dagster pool its step waits in (the
source side), the write target whose quota it shares, and the team its backfill runs are charged to (pure).

- **Pool**: one Dagster pool per step. A root asset (no upstream) reads a source system, so without a pool of its
  own it waits in ``source_system``; other assets wait in none unless they name one.
- **Target**: a named place the step writes and publishes to (a warehouse); at most the configured number of steps
  write to one target at once, counted in the catalog (``engine/store/target_slots.py``).
- **Team**: an asset's team is its first owner (``unowned`` without one). A request is charged to the team of its
  most upstream requested asset (the fewest assets above it; alphabetically first among equals, as Dagster's
  asset graph sorts them), so a request spanning several owners' assets counts against exactly one team's limit,
  the same on every run it makes.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

from backfill_assets.engine.model.errors import InvalidInput

DEFAULT_SOURCE_POOL = "source_system"
UNOWNED_TEAM = "unowned"
# Pool and target names: what a Dagster pool, a tag value and a log line carry safely.
_GATE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:/-]{0,63}\Z")


def validate_gate_name(value: object, what: str, asset: str) -> str:
    if not isinstance(value, str) or not _GATE_NAME_RE.fullmatch(value):
        raise InvalidInput(
            f"{asset}: {what} {value!r} must be 1-64 letters, digits or _ . : / - (starting with a letter, digit "
            "or _)"
        )
    return value


def pool_for(declared_pool: str | None, upstream: tuple[str, ...]) -> str | None:
    """The Dagster pool of an asset's step: the one it declared, else ``source_system`` for a root asset."""
    if declared_pool is not None:
        return declared_pool
    return None if upstream else DEFAULT_SOURCE_POOL


def team_of(owners: Iterable[str]) -> str:
    first = next(iter(owners), None)
    return first if first else UNOWNED_TEAM


def upstream_first(assets: Iterable[str], upstream_of: Mapping[str, Iterable[str]]) -> list[str]:
    """``assets`` by their level in the graph (a root 0, else one more than its highest upstream), then name: the
    order of Dagster's ``toposorted_asset_keys``, so a request and a UI backfill of the same assets agree."""
    levels: dict[str, int] = {}

    def level(name: str) -> int:
        if name not in levels:
            levels[name] = 1 + max((level(u) for u in upstream_of.get(name, ()) if u in upstream_of), default=-1)
        return levels[name]

    return sorted(assets, key=lambda name: (level(name), name))


def team_of_request(owners_in_graph_order: Iterable[tuple[str, Iterable[str]]]) -> str:
    """The team a request (or a run) is charged to: the first owner of its first asset in graph order."""
    for _asset, owners in owners_in_graph_order:
        return team_of(owners)
    return UNOWNED_TEAM


def validate_target_limits(limits: Mapping[str, object] | None, targets_by_asset: Mapping[str, str]) -> dict[str, int]:
    """The configured write limits, each a whole number ≥ 1, covering every target an asset names; else a clear
    error naming the asset, the target and where the limit is set."""
    checked: dict[str, int] = {}
    for target, limit in (limits or {}).items():
        validate_gate_name(target, "target", "target_limits")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidInput(f"target_limits[{target!r}] = {limit!r}: a write limit is a whole number, at least 1")
        checked[target] = limit
    unlimited = {asset: t for asset, t in targets_by_asset.items() if t not in checked}
    if unlimited:
        raise InvalidInput(
            "every write target needs a limit: "
            + "; ".join(f"{asset} writes to {t!r}" for asset, t in sorted(unlimited.items()))
            + f" — set BackfillResource(target_limits={{...}}) (configured: {sorted(checked) or 'none'})"
        )
    return checked


def validate_target_timing(lease_seconds: object, wait_seconds: object) -> None:
    """A lease must last (its holder renews it every third of it); a wait may be 0 (fail at once when busy)."""
    for name, value, least in (("target_lease_seconds", lease_seconds, 0.3), ("target_wait_seconds", wait_seconds, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < least:
            raise InvalidInput(f"{name} = {value!r}: a number of seconds, at least {least:g}")
