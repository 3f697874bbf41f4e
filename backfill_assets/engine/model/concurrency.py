"""How many runs of one request can really execute at once, given the run queue's limits (pure).

A request's ``max_active`` is a ceiling the driver keeps; the instance's run queue has limits of its own
(``max_concurrent_runs``, tag limits such as one lane shared by every backfill). The lower one wins, silently
unless someone says so: ``request create`` and the dry run print this module's answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from backfill_assets.engine.model import tags as T


@dataclass(frozen=True)
class RunLimit:
    """One ``tag_concurrency_limits`` entry: ``key``, optional ``value``, or a limit per distinct value."""

    key: str
    limit: int
    value: str | None = None
    per_value: bool = False

    def applies_to(self, run_tags: Mapping[str, str]) -> bool:
        if self.key not in run_tags:
            return False
        return self.per_value or self.value is None or run_tags[self.key] == self.value

    def describe(self) -> str:
        if self.per_value:
            per = {T.REQUEST_ID: "per request", T.TEAM: "per team, shared by the team's every backfill"}
            return f"tag limit {self.key}: {self.limit} per distinct value ({per.get(self.key, 'per value')})"
        target = f"{self.key}={self.value}" if self.value is not None else self.key
        return f"tag limit {target}: {self.limit}, shared by every run carrying it (every backfill)"


def run_limits(tag_concurrency_limits: Iterable[Any] | None) -> list[RunLimit]:
    """``tag_concurrency_limits`` entries as Dagster's config holds them (dagster.yaml, or the instance's run queue
    config); malformed entries are left out."""
    limits = []
    for entry in tag_concurrency_limits or []:
        if not isinstance(entry, dict) or "key" not in entry or not isinstance(entry.get("limit"), int):
            continue
        value = entry.get("value")
        per_value = isinstance(value, dict) and value.get("applyLimitPerUniqueValue") is True
        limits.append(
            RunLimit(str(entry["key"]), entry["limit"], None if per_value or value is None else str(value), per_value)
        )
    return limits


@dataclass(frozen=True)
class Concurrency:
    requested: int
    effective: int
    reasons: tuple[str, ...]

    @property
    def note(self) -> str | None:
        """One line for a person, or None when the request's own max_active is what runs."""
        if self.effective >= self.requested:
            return None
        return (
            f"max_active {self.requested}, but at most {self.effective} run(s) of this request execute at once: "
            + "; ".join(self.reasons)
        )


def effective_concurrency(
    max_active: int,
    run_tags: Mapping[str, str],
    max_concurrent_runs: int | None,
    limits: Iterable[RunLimit],
    source: str = "dagster.yaml",
) -> Concurrency:
    """The number of the request's runs that can execute at once, and which limits make it lower.

    ``backfill/slot`` is the driver's own mechanism (one run per slot, max_active slots) and never lowers it.
    """
    effective = max_active
    reasons: list[str] = []
    if max_concurrent_runs is not None and 0 <= max_concurrent_runs < effective:
        effective = max_concurrent_runs
        reasons.append(f"{source} max_concurrent_runs {max_concurrent_runs}, shared by every run of the instance")
    for limit in limits:
        if limit.key == T.SLOT or not limit.applies_to(run_tags):
            continue
        if limit.limit < max_active:
            effective = min(effective, limit.limit)
            reasons.append(f"{source} {limit.describe()}")
    return Concurrency(max_active, max(effective, 0), tuple(reasons))
