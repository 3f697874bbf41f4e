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


# Where the instance's run queue limits are set (Dagster also reads the older ``run_queue`` block).
MAX_RUNS_SETTING = "concurrency.runs.max_concurrent_runs"
TAG_LIMITS_SETTING = "concurrency.runs.tag_concurrency_limits"


@dataclass(frozen=True)
class Concurrency:
    """How many of a request's runs execute at once: ``requested`` (its max_active) or less. ``reasons``: every
    run queue limit below it; ``binding``: the one(s) at ``effective``, what to raise to run more, set where
    ``raise_in`` says."""

    requested: int
    effective: int
    reasons: tuple[str, ...]
    binding: tuple[str, ...] = ()
    raise_in: str | None = None

    @property
    def note(self) -> str | None:
        """One line for a person, or None when the request's own max_active is what runs."""
        if self.effective >= self.requested:
            return None
        others = [r for r in self.reasons if r not in self.binding]
        return (
            f"max_active {self.requested}, but at most {self.effective} run(s) of this request execute at once: "
            f"bound by {' and '.join(self.binding)}"
            + (f" (also below max_active: {'; '.join(others)})" if others else "")
            + (f"; to run more at once, raise {'them' if len(self.binding) > 1 else 'it'} under {self.raise_in}"
               if self.raise_in else "")
        )

    def as_dict(self) -> dict[str, Any]:
        """What every door prints: the request's max_active, what runs, and the limit that binds (if one does)."""
        return {"max_active": self.requested, "effective": self.effective, "bound_by": list(self.binding),
                "raise_in": self.raise_in, "note": self.note}


def effective_concurrency(
    max_active: int,
    run_tags: Mapping[str, str],
    max_concurrent_runs: int | None,
    limits: Iterable[RunLimit],
    source: str = "dagster.yaml",
) -> Concurrency:
    """The number of the request's runs that can execute at once, which limits make it lower and which one binds.

    ``backfill/slot`` is the driver's own mechanism (one run per slot, max_active slots) and never lowers it.
    ``source`` names where the limits were read (a dagster.yaml path, or the instance's run queue).
    """
    below: list[tuple[int, str, str]] = []  # (limit, description, the setting that holds it)
    if max_concurrent_runs is not None and 0 <= max_concurrent_runs < max_active:
        below.append((max_concurrent_runs, f"max_concurrent_runs {max_concurrent_runs}, shared by every run of the "
                      "instance", MAX_RUNS_SETTING))
    for limit in limits:
        if limit.key == T.SLOT or not limit.applies_to(run_tags):
            continue
        if limit.limit < max_active:
            below.append((limit.limit, limit.describe(), TAG_LIMITS_SETTING))
    if not below:
        return Concurrency(max_active, max_active, ())
    effective = max(min(n for n, _, _ in below), 0)
    binding = [(text, setting) for n, text, setting in below if max(n, 0) == effective]
    settings = " and ".join(dict.fromkeys(setting for _, setting in binding))
    where = source if source.endswith("dagster.yaml") else "the instance's dagster.yaml"
    return Concurrency(max_active, effective, tuple(text for _, text, _ in below),
                       tuple(text for text, _ in binding), f"{settings} in {where}")
