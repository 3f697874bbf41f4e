"""The version life cycle (docs/ARCHITECTURE.md#life-cycle) as data: states and the transitions allowed."""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Any, TypeVar, cast

from backfill_assets.engine.model.errors import IllegalTransition

E = TypeVar("E", bound=Enum)


def member(kind: type[E], value: Any) -> E:
    """``kind(value)`` as a dictionary lookup (an unknown value still raises ``kind``'s own ValueError): calling an
    enum class costs ~6 µs, and a ten-year request's reports read ~80,000 states and decisions from their rows."""
    found = kind._value2member_map_.get(value)
    return cast(E, found) if found is not None else kind(value)


class VersionState(StrEnum):
    WRITING = "WRITING"
    VERIFYING = "VERIFYING"
    PUBLISHED = "PUBLISHED"
    SUPERSEDED = "SUPERSEDED"
    ROLLED_BACK = "ROLLED_BACK"
    REJECTED = "REJECTED"
    ABANDONED = "ABANDONED"
    PURGED = "PURGED"


class RunStatus(StrEnum):
    """A Dagster run's status as the engine reads it (the integration hands it over by name: Dagster's
    ``DagsterRunStatus`` values), so no engine module spells one as a string of its own."""

    QUEUED = "QUEUED"
    NOT_STARTED = "NOT_STARTED"
    MANAGED = "MANAGED"
    STARTING = "STARTING"
    STARTED = "STARTED"
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    CANCELING = "CANCELING"
    CANCELED = "CANCELED"
    # Not Dagster's: a run id the catalog names that Dagster has no record of (deleted, or another instance's).
    UNKNOWN = "unknown"


# A run in one of these has ended: nothing it was writing will change any more.
FINISHED_RUN_STATUSES = frozenset({RunStatus.SUCCESS, RunStatus.FAILURE, RunStatus.CANCELED})

S = VersionState

ALLOWED: dict[VersionState, frozenset[VersionState]] = {
    S.WRITING: frozenset({S.VERIFYING, S.ABANDONED}),
    # A run that dies during its checks is found by reconcile and abandoned as well.
    S.VERIFYING: frozenset({S.PUBLISHED, S.REJECTED, S.ABANDONED}),
    S.PUBLISHED: frozenset({S.SUPERSEDED, S.ROLLED_BACK}),
    # A rollback re-publishes a verified version the pointer had moved off.
    S.SUPERSEDED: frozenset({S.PUBLISHED, S.PURGED}),
    S.ROLLED_BACK: frozenset({S.PUBLISHED, S.PURGED}),
    S.REJECTED: frozenset({S.PURGED}),
    S.ABANDONED: frozenset({S.PURGED}),
    S.PURGED: frozenset(),
}

# Edges an operator's override may take, and nothing else may (``backfill-assets accept`` / ``reject``): a person
# who checked a rejected version's data publishes it, or finds a published version bad after the fact. Kept apart
# from ALLOWED so the life cycle itself still never publishes a failed check.
OVERRIDE_ALLOWED: dict[VersionState, frozenset[VersionState]] = {
    S.REJECTED: frozenset({S.PUBLISHED}),
    S.PUBLISHED: frozenset({S.REJECTED}),
}

# States whose files passed every blocking check: the only valid rollback targets.
VERIFIED = frozenset({S.PUBLISHED, S.SUPERSEDED, S.ROLLED_BACK})
TERMINAL_FAILED = frozenset({S.REJECTED, S.ABANDONED})
IN_PROGRESS = frozenset({S.WRITING, S.VERIFYING})


def check_transition(
    version_id: str, current: VersionState | str, target: VersionState | str, override: bool = False
) -> None:
    """Raise unless ``current -> target`` is in the life cycle, or (``override``) is an operator's override edge."""
    cur, tgt = VersionState(current), VersionState(target)
    allowed = ALLOWED[cur] | (OVERRIDE_ALLOWED.get(cur, frozenset()) if override else frozenset())
    if tgt not in allowed:
        raise IllegalTransition(f"version {version_id}: {cur.value} -> {tgt.value} is not allowed")
