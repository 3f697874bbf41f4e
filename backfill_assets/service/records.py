"""What the service's operations return: frozen records that every surface renders its own way (the CLI as text
or ``--json``, the Launchpad as run metadata, a Python caller as attributes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.model.concurrency import Concurrency
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.plan.planning import PlanAction
from backfill_assets.engine.store.ledger import RequestRecord
from backfill_assets.engine.store.operations import Operation
from backfill_assets.engine.store.pauses import Pause


@dataclass(frozen=True)
class Request:
    """A request as the ledger froze it, and where it stands."""

    request_id: str
    status: M.RequestStatus
    source: str  # a RequestSource value: the surface it was made from
    spec: M.RequestSpec
    code_version: str
    requested_at: datetime | str
    message: str | None = None
    confirmed_at: datetime | str | None = None
    closed_at: datetime | str | None = None

    @classmethod
    def of(cls, record: RequestRecord) -> Request:
        return cls(
            request_id=record.request_id, status=M.RequestStatus(record.status), source=record.source,
            spec=record.spec, code_version=record.code_version, requested_at=record.requested_at,
            message=record.message, confirmed_at=record.confirmed_at, closed_at=record.closed_at,
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape every surface prints (``request show --json``): the spec's fields flattened."""
        spec = self.spec
        return {
            "request_id": self.request_id, "status": str(self.status), "source": self.source,
            "assets": list(spec.assets), "partitions": list(spec.partitions), "code_version": self.code_version,
            "reprocess": str(spec.reprocess), "downstream": str(spec.downstream), "order": str(spec.order),
            "confirm_cascade": spec.confirm_cascade, "max_active": spec.max_active,
            "effective_max_active": spec.effective_max_active, "serial": spec.serial,
            "wait_for_overlap": spec.wait_for_overlap,
            "partitions_per_run": spec.partitions_per_run, "partitions_per_run_mode": spec.partitions_per_run_text,
            "only_failed": spec.only_failed, "conf": spec.conf, "allow_side_effects": list(spec.allow_side_effects),
            "approved_by": spec.approved_by, "requested_by": spec.requested_by, "system_user": spec.system_user,
            "reason": spec.reason,
            "requested_at": self.requested_at, "message": self.message, "confirmed_at": self.confirmed_at,
            "closed_at": self.closed_at,
        }


@dataclass(frozen=True)
class PlannedCell(JsonRecord):
    """A cell's decision in a dry run: what the driver would do now, and why."""

    asset: str
    partition_key: str
    action: PlanAction
    reason: str


@dataclass(frozen=True)
class PlannedRun(JsonRecord):
    """One run a request would launch: its first and last interval and its assets."""

    first: str
    last: str
    intervals: int
    assets: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.first if self.first == self.last else f"{self.first}..{self.last}"


@dataclass(frozen=True)
class RequestPlan:
    """A dry run: the validated spec, the code version it would freeze, each cell's decision and the runs."""

    spec: M.RequestSpec
    code_version: str
    concurrency: Concurrency
    cells: tuple[PlannedCell, ...]
    runs: tuple[PlannedRun, ...]

    def notes(self, shown: int = 8) -> list[str]:
        """Lines for people: runs at once, K and why, the runs, the queue's limit when it bites."""
        labels = [r.label for r in self.runs]
        listed = ", ".join(labels[:shown]) + (f", … and {len(labels) - shown} more" if len(labels) > shown else "")
        lines = [
            f"at most {self.concurrency.effective} run(s) at once",
            f"partitions per run: {self.spec.partitions_per_run} ({self.spec.partitions_per_run_text})",
            f"{len(self.runs)} run(s): {listed}" if self.runs else "0 runs: nothing to create",
        ]
        return lines + ([self.concurrency.note] if self.concurrency.note else [])

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": True, "code_version": self.code_version, "max_active": self.spec.effective_max_active,
            "order": str(self.spec.order),
            "cells": [c.as_dict() for c in self.cells], "partitions_per_run": self.spec.partitions_per_run,
            "partitions_per_run_mode": self.spec.partitions_per_run_text,
            "runs": [r.as_dict() for r in self.runs],
            "effective_concurrency": self.concurrency.effective, "concurrency_note": self.concurrency.note,
            "concurrency": self.concurrency.as_dict(),
        }


@dataclass(frozen=True)
class CreatedRequest:
    """A request just frozen in the ledger; the driver carries it out."""

    request: Request
    concurrency: Concurrency

    def as_dict(self) -> dict[str, Any]:
        return {**self.request.as_dict(), "effective_concurrency": self.concurrency.effective,
                "concurrency_note": self.concurrency.note, "concurrency": self.concurrency.as_dict()}


@dataclass(frozen=True)
class Cleared:
    """``clear``: what the selection and the days resolved to, and the dry run or the request created."""

    select: str
    assets: tuple[str, ...]
    first: str
    last: str
    days_asked: str
    plan: RequestPlan | None = None
    created: CreatedRequest | None = None

    def as_dict(self) -> dict[str, Any]:
        if self.created is not None:
            outcome = self.created.as_dict()
        elif self.plan is not None:
            outcome = self.plan.as_dict()
        else:
            raise ValueError("a Cleared holds the dry run's plan or the request it created")
        return {**outcome, "selection": self.select, "selected_assets": list(self.assets),
                "days_asked": self.days_asked, "first": self.first, "last": self.last}


# The cell counts a person is shown, in this order, under these names (``in flight``: submitted, not yet decided).
HEADLINE_COUNTS = ("planned", "published", "rejected", "failed", "rolled_back", "skipped", "in flight")


def headline_counts(counts: Mapping[str, int]) -> dict[str, int]:
    """The counts every door shows a person (``HEADLINE_COUNTS``): ``list``'s columns, ``show``'s and ``wait``'s
    summary line. A failed cell (its run broke) is never counted as rejected (its checks judged it)."""
    # A following cell is in flight too: another run writes it now, and the cell takes its outcome.
    named = {**counts, "in flight": counts.get(M.SUBMITTED, 0) + counts.get(M.FOLLOWING, 0)}
    return {name: named.get(name, 0) for name in HEADLINE_COUNTS}


@dataclass(frozen=True)
class RequestSummary:
    """``list``: a request, its pause (if paused) and its cells' counts now."""

    request: Request
    pause: Pause | None
    counts: Mapping[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {**self.request.as_dict(), "pause": _plain_pause(self.pause), "counts": dict(self.counts)}


@dataclass(frozen=True)
class RequestDetail:
    """``show``: the request, its pause (if paused) and pause history, counts, every cell's decision now, and how
    many of its runs the run queue lets execute at once (the limit that binds, when one does)."""

    request: Request
    pause: Pause | None
    pauses: tuple[Pause, ...]
    counts: Mapping[str, int]
    cells: tuple[Cell, ...] = field(default=())
    # Every operation made on it through the service (create, pause, resume, confirm, cancel), oldest first.
    operations: tuple[Operation, ...] = field(default=())
    concurrency: Concurrency | None = None

    def as_dict(self) -> dict[str, Any]:
        return {**self.request.as_dict(), "pause": _plain_pause(self.pause),
                "pauses": [p.as_dict() for p in self.pauses], "counts": dict(self.counts),
                "cells": [c.as_dict() for c in self.cells],
                "operations": [o.as_dict() for o in self.operations],
                "concurrency": self.concurrency.as_dict() if self.concurrency is not None else None}


@dataclass(frozen=True)
class Progress:
    """Where a request stands (``wait`` polls it): status, message and the cells' counts."""

    request_id: str
    status: M.RequestStatus
    message: str | None
    counts: Mapping[str, int]

    @property
    def waiting_on_nothing(self) -> bool:
        """Closed or blocked: nothing more happens without someone acting."""
        return self.status in (*M.CLOSED_STATUSES, M.BLOCKED)

    @property
    def complete(self) -> bool:
        """Closed normally with every planned cell published or deliberately skipped."""
        c = self.counts
        return self.status == M.COMPLETED and c["published"] + c["skipped"] == c["planned"]

    def summary(self) -> str:
        return " | ".join([*(f"{name} {n}" for name, n in headline_counts(self.counts).items()), self.status])


@dataclass(frozen=True)
class Cancelled:
    """``cancel``: the runs it stopped, those marked cancelled without their code server's answer (forced), and
    an adopted Dagster backfill's status."""

    request_id: str
    already_cancelled: bool
    terminated_runs: tuple[str, ...]
    forced_runs: tuple[str, ...]
    adopted: bool = False  # a Dagster backfill (the UI's dialog): Dagster's backfill was cancelled too
    dagster_backfill_status: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out = {"request_id": self.request_id, "status": str(M.CANCELLED),
               "already_cancelled": self.already_cancelled, "terminated_runs": list(self.terminated_runs),
               "forced_runs": list(self.forced_runs)}
        return out | ({"dagster_backfill_status": self.dagster_backfill_status} if self.adopted else {})


@dataclass(frozen=True)
class Paused:
    """``pause``: the request's pause (the first one's who, when and why when it was already paused) and its cells
    still in flight, which finish and are recorded."""

    request_id: str
    already_paused: bool
    pause: Pause
    in_flight: int

    def as_dict(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "status": str(M.PAUSED), "already_paused": self.already_paused,
                "pause": self.pause.as_dict(), "in_flight": self.in_flight}


@dataclass(frozen=True)
class Resumed(JsonRecord):
    """``resume``: the status the request went back to, and the pause it ended."""

    request_id: str
    status: M.RequestStatus
    pause: Pause


def _plain_pause(pause: Pause | None) -> dict[str, Any] | None:
    return pause.as_dict() if pause else None
