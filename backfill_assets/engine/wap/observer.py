"""What the gate tells an observer (lineage emitters, audit trails) about one attempt, and the rule that an
observer can never change what the gate does.

The gate calls its observers when an attempt begins (its version is WRITING), when it concludes (the version is
PUBLISHED or REJECTED) and when it is abandoned (an error, or a publish refused because its run was cancelled).
An observer that raises is reported through ``warn`` and otherwise ignored: a receiver that is down must never
fail, delay past its own timeout, or change a publish.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Callable, Protocol, Sequence

from backfill_assets.engine.model.graph import DeclaredAsset
from backfill_assets.engine.model.identity import RunIdentity
from backfill_assets.engine.store.catalog import Version
from backfill_assets.engine.wap.audit import CheckOutcome

_log = logging.getLogger(__name__)


class AttemptStage(Enum):
    """Where an attempt is: begun (writing), or concluded one of three ways."""

    BEGAN = "began"
    PUBLISHED = "published"
    REJECTED = "rejected"
    ABANDONED = "abandoned"


@dataclass(frozen=True)
class AttemptEvent:
    """One moment of one attempt: the version as the catalog holds it then, the upstream versions read so far,
    and (once judged) the checks and the pointer move."""

    stage: AttemptStage
    spec: DeclaredAsset
    identity: RunIdentity
    version: Version
    inputs: tuple[Version, ...] = ()
    checks: tuple[CheckOutcome, ...] = ()
    error: str | None = None
    # Published: the version the pointer moved off (None for the day's first). Rejected: the version still serving.
    previous_version_id: str | None = None
    serving_version_id: str | None = None
    # An abandon because the run was cancelled (the publish was refused), not because the step failed.
    cancelled: bool = False

    @property
    def failed_checks(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]


class AttemptObserver(Protocol):
    """Told about every stage of every attempt a gate runs."""

    def observe(self, event: AttemptEvent) -> None: ...


def notify(
    observers: Sequence[AttemptObserver], event: AttemptEvent, warn: Callable[[str], None] | None = None
) -> None:
    """Tell each observer; one that raises is reported and skipped, never propagated (the gate goes on)."""
    for observer in observers:
        try:
            observer.observe(event)
        except Exception as exc:  # noqa: BLE001 — an observer's failure must not reach the publish
            message = (
                f"{type(observer).__name__} failed on {event.stage.value} of {event.version.version_id}: "
                f"{type(exc).__name__}: {exc}; the attempt goes on"
            )
            (warn or _log.warning)(message)
