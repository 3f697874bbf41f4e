"""Backfill requests as data: the spec a user asks for, statuses, cell decisions (docs/ARCHITECTURE.md#requests)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Iterable

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.graph import AssetGraph


class ReprocessPolicy(StrEnum):
    """Which cells a request re-runs (Airflow's backfill ``--reprocess-behavior``)."""

    NONE = "none"  # only intervals with no run at all
    FAILED = "failed"  # also those whose latest attempt failed, was rejected or died mid-write
    COMPLETED = "completed"  # every interval


class DownstreamPolicy(StrEnum):
    """What a request's publishes set in motion downstream."""

    NONE = "none"
    CASCADE = "cascade"
    HANDOFF = "handoff"


class Order(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"


class RequestStatus(StrEnum):
    WAITING = "waiting"  # for another request's claim on overlapping partitions
    OPEN = "open"
    BLOCKED = "blocked"
    # Closed with every cell published or deliberately skipped (already published, the policy, a person's mark).
    COMPLETED = "completed"
    # Closed with a cell rejected, failed or left unpublished: automation must not carry on as if it were done.
    FAILED = "failed"
    CANCELLED = "cancelled"
    # Submits nothing new until `request resume` (which restores the status it had); keeps its claims, settles
    # the runs already in flight, and never closes while paused (engine/store/pauses.py).
    PAUSED = "paused"


class CellDecision(StrEnum):
    """A cell's state in the ledger (``request_items.decision``)."""

    PENDING = "pending"
    SUBMITTED = "submitted"
    # Another run (a production run, another request's, a UI backfill's) had the day in flight when the cell was
    # decided: never a duplicate, the cell waits for that run and takes its outcome.
    FOLLOWING = "following"
    PUBLISHED = "published"
    REJECTED = "rejected"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    # Reported, never stored: a published cell whose version was since rolled back (reconcile, request show).
    ROLLED_BACK = "rolled_back"


class RequestSource(StrEnum):
    """Where a request was made. Python, CLI and Launchpad requests are planned and driven by the driver sensor; a
    Dagster backfill (the UI's dialog, ``dagster job backfill``) is adopted and run by Dagster's daemon."""

    PYTHON = "python"  # the service layer called directly (backfill_assets.service.Backfills)
    CLI = "cli"
    LAUNCHPAD = "launchpad"
    DAGSTER = "dagster"


DRIVEN_SOURCES = (RequestSource.PYTHON, RequestSource.CLI, RequestSource.LAUNCHPAD)


# StrEnum members are the strings they stand for: rows read back compare equal, JSON and SQL see plain strings.
REPROCESS_POLICIES = tuple(ReprocessPolicy)
DOWNSTREAM_POLICIES = tuple(DownstreamPolicy)
ORDERS = tuple(Order)

WAITING, OPEN, BLOCKED = RequestStatus.WAITING, RequestStatus.OPEN, RequestStatus.BLOCKED
COMPLETED, CANCELLED, PAUSED = RequestStatus.COMPLETED, RequestStatus.CANCELLED, RequestStatus.PAUSED
# Not closed: the driver still visits them (a paused request's runs in flight are settled) and they hold claims.
ACTIVE_STATUSES = (WAITING, OPEN, BLOCKED, PAUSED)
# The statuses a pause may interrupt, and so the ones a resume restores.
PAUSABLE_STATUSES = (WAITING, OPEN, BLOCKED)
REQUEST_FAILED = RequestStatus.FAILED  # not FAILED: that name is the cell decision's (same string)
CLOSED_STATUSES = (COMPLETED, REQUEST_FAILED, CANCELLED)
REQUEST_STATUSES = tuple(RequestStatus)
# Names a status filter takes besides the statuses themselves (`request list --status active`).
STATUS_GROUPS = {"active": ACTIVE_STATUSES, "closed": CLOSED_STATUSES}


def statuses_named(names: Iterable[str]) -> tuple[RequestStatus, ...]:
    """The statuses ``names`` stand for (each a status or a group: active, closed), or a refusal naming them."""
    chosen: dict[RequestStatus, None] = {}
    for name in names:
        if name in STATUS_GROUPS:
            chosen.update(dict.fromkeys(STATUS_GROUPS[name]))
        elif name in REQUEST_STATUSES:
            chosen[RequestStatus(name)] = None
        else:
            allowed = ", ".join([*REQUEST_STATUSES, *STATUS_GROUPS])
            raise InvalidField("{status} {value!r} is not a request status; one of: {allowed}", value=name,
                               allowed=allowed)
    return tuple(chosen)

PENDING = CellDecision.PENDING
SUBMITTED = CellDecision.SUBMITTED
FOLLOWING = CellDecision.FOLLOWING
PUBLISHED = CellDecision.PUBLISHED
REJECTED = CellDecision.REJECTED
FAILED = CellDecision.FAILED
SKIPPED = CellDecision.SKIPPED
CELL_CANCELLED = CellDecision.CANCELLED
TERMINAL_CELLS = (PUBLISHED, REJECTED, FAILED, SKIPPED, CELL_CANCELLED)
SUCCESS_CELLS = (PUBLISHED, SKIPPED)
IN_PROGRESS_CELLS = (SUBMITTED, FOLLOWING)  # a run writes the cell now: what reads it waits

CONF_KEYS = ("handoff_window_seconds",)
MAX_CONF_BYTES = 64 * 1024
MAX_CONF_DEPTH = 8
MAX_ACTIVE_LIMIT = 64
MAX_PARTITIONS = 20_000
MAX_PARTITIONS_PER_RUN = 366
class PerRunMode(StrEnum):
    """How a request's partitions_per_run was chosen: given as a number, or resolved from ``auto`` (the default)
    to a number at creation; the spec records which, and for ``auto`` why (``per_run_text``)."""

    EXPLICIT = "explicit"
    AUTO = "auto"


AUTO = PerRunMode.AUTO.value
EXPLICIT = PerRunMode.EXPLICIT.value
_AUTO_PREFIX = f"{AUTO}: "


def per_run_text(mode: PerRunMode, reason: str | None) -> str:
    """The stored and printed form of how K was chosen: ``explicit``, or ``auto: <why>``."""
    return f"{_AUTO_PREFIX}{reason}" if mode is PerRunMode.AUTO and reason else str(mode)


def parse_per_run_text(text: str | None) -> tuple[PerRunMode, str | None]:
    """``per_run_text`` read back (the catalog's column, NULL in a catalog from before it: explicit), once, where
    the stored row becomes a spec."""
    if not text or text == EXPLICIT:
        return PerRunMode.EXPLICIT, None
    if text == AUTO:
        return PerRunMode.AUTO, None
    if text.startswith(_AUTO_PREFIX):
        return PerRunMode.AUTO, text.removeprefix(_AUTO_PREFIX)
    raise ValueError(f"partitions_per_run_mode {text!r} is neither explicit nor auto: <why>")
# Auto batches only when each run slot would otherwise start more than this many one-interval runs in a row. A
# run's fixed cost is its launch and worker start-up (docs/BENCHMARKS.md: 20 days over 2 slots took 90.7 s one
# interval per run, 30.9 s in 2 chunk runs), so it is the long requests that pay. Up to 3 intervals per slot the
# saving is at most 2 start-ups a slot, and a handful of days keep what a run per interval gives: one Dagster run
# per partition to open, cancel or re-run, and one slot that a slow day does not hold for its neighbours.
AUTO_MIN_INTERVALS_PER_SLOT = 3


def new_request_id(now: datetime) -> str:
    return f"req-{now.strftime('%Y%m%d')}-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class RequestSpec:
    """A validated ``request create``: every field checked, the partition list expanded and frozen."""

    assets: tuple[str, ...]
    partitions: tuple[str, ...]
    reprocess: str = "failed"
    max_active: int = 2
    order: str = "forward"
    downstream: str = "none"
    confirm_cascade: bool = False
    allow_side_effects: tuple[str, ...] = ()
    approved_by: str | None = None
    conf: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    requested_by: str = "unknown"
    # Who the system saw create it, beside the names stated (requested_by, approved_by): the OS user of a CLI call,
    # the launching user Dagster recorded on a run (none in Dagster OSS: see engine/model/access.py).
    system_user: str | None = None
    wait_for_overlap: bool = False
    partitions_per_run: int = 1
    # How partitions_per_run was chosen, and for auto why (resolve_partitions_per_run); per_run_text joins them.
    partitions_per_run_mode: PerRunMode = PerRunMode.EXPLICIT
    partitions_per_run_reason: str | None = None
    # Frozen at build time from the graph: a depends-on-past asset is selected, so intervals run one at a time.
    serial: bool = False
    # ``clear --only-failed``: only cells whose latest attempt failed (rejected, abandoned, or a run that died
    # before writing) are re-run; a cell that never ran is left alone too (reprocess=failed would run it).
    only_failed: bool = False

    @property
    def partitions_per_run_auto(self) -> bool:
        return self.partitions_per_run_mode is PerRunMode.AUTO

    @property
    def partitions_per_run_text(self) -> str:
        """How partitions_per_run was chosen, as stored and printed: ``explicit`` or ``auto: <why>``."""
        return per_run_text(self.partitions_per_run_mode, self.partitions_per_run_reason)

    @property
    def effective_max_active(self) -> int:
        # Depends-on-past intervals run strictly in order, one at a time.
        return 1 if self.serial else self.max_active

    def ordered_partitions(self) -> list[str]:
        return list(self.partitions) if self.order == "forward" else list(reversed(self.partitions))

    def side_effect_authorized(self, asset: str) -> bool:
        return asset in self.allow_side_effects and bool(self.approved_by)

    def excluded_cells(self, graph: AssetGraph) -> dict[tuple[str, str], str]:
        """Cells left out at creation: side-effecting assets the request did not authorize."""
        return {
            (asset, partition): "side effect not authorized"
            for asset in self.assets
            if graph[asset].side_effect and not self.side_effect_authorized(asset)
            for partition in self.partitions
        }

    def config_for(self, asset: str) -> dict[str, Any]:
        """The asset's own run config frozen in the request (every field, defaults filled), or {}."""
        return {} if asset in CONF_KEYS else dict(self.conf.get(asset) or {})
