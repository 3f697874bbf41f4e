"""A request's cells as typed records: one (asset, partition) of a request, and a change to one."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Mapping

from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.request_model import CellDecision
from backfill_assets.engine.model.states import member

# The reasons of a cell skipped because something before it did not publish (SkipKind.LEFT_UNPUBLISHED).
UPSTREAM_NOT_PUBLISHED = "upstream of this request was not published"
PREVIOUS_NOT_PUBLISHED = "previous interval {} not published (depends on past)"


class SkipKind(StrEnum):
    """Why a cell was skipped, stored beside its reason so that nothing reads the reason's words."""

    LEFT_UNPUBLISHED = "left_unpublished"  # something before it (an upstream cell, its previous day) did not publish
    MARKED = "marked"  # a person's skip mark (``backfill-assets skip``) decided it
    DECIDED = "decided"  # the request's policy left it alone: already done, in flight, not authorized, not run


@dataclass(frozen=True)
class Skip:
    """Why a cell is left alone: the words for people and the kind for the code."""

    reason: str
    kind: SkipKind = SkipKind.DECIDED
    # Left alone because this run was writing the cell: the cell takes that run's outcome (settling.followed_outcome).
    followed_run_id: str | None = None


class CellOrigin(StrEnum):
    """Why a cell is in the request."""

    PLANNED = "planned"  # the request's own selection
    CASCADE = "cascade"  # added by the propagation sensor along lineage
    HANDOFF = "handoff"  # accepted by a downstream owner


@dataclass
class Cell(JsonRecord):
    """One (asset, partition) of a request, as the ledger holds it (``request_items``)."""

    request_id: str
    asset: str
    partition_key: str
    ordinal: int
    origin: str
    decision: str
    reason: str | None = None
    # The Dagster run that writes (or wrote) the cell: not the logical run of a version (column ``run_id``).
    dagster_run_id: str | None = None
    run_key: str | None = None
    submitted_at: str | None = None
    updated_at: str | None = None
    skip_kind: SkipKind | None = None  # a skipped cell's kind of skip

    @property
    def key(self) -> tuple[str, str]:
        return (self.asset, self.partition_key)

    @property
    def left_unpublished(self) -> bool:
        """Skipped because something before it did not publish, as opposed to deliberately."""
        return self.decision == CellDecision.SKIPPED and self.skip_kind == SkipKind.LEFT_UNPUBLISHED

    def skip(self, reason: str, kind: SkipKind, **values: Any) -> "CellUpdate":
        """Skip this cell: the reason for people, the kind for the code."""
        return self.change(decision=CellDecision.SKIPPED, reason=reason, skip_kind=kind, **values)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "Cell":
        return cls(
            request_id=row["request_id"],
            asset=row["asset"],
            partition_key=row["partition_key"],
            ordinal=int(row["ordinal"]),
            origin=member(CellOrigin, row["origin"]),
            decision=member(CellDecision, row["decision"]),
            reason=row["reason"],
            dagster_run_id=row["run_id"],
            run_key=row["run_key"],
            submitted_at=row["submitted_at"],
            updated_at=row["updated_at"],
            skip_kind=member(SkipKind, row["skip_kind"]) if row.get("skip_kind") else None,
        )

    def change(self, **values: Any) -> "CellUpdate":
        """Apply ``values`` (Cell field names) to this cell and return the update to store."""
        for name, value in values.items():
            setattr(self, name, value)
        return CellUpdate(self.asset, self.partition_key, values)


@dataclass(frozen=True)
class CellUpdate:
    """A change to one cell: Cell field names (decision, reason, dagster_run_id, run_key) to their new values."""

    asset: str
    partition_key: str
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.asset, self.partition_key)

    @property
    def decision(self) -> str | None:
        return self.values.get("decision")
