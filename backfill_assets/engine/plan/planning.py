"""Deciding each cell of a request at submit time (Airflow's reprocess semantics) — pure functions.

The dry run and the driver call the same ``decide`` on the same facts, so what the dry run prints is what the
driver then does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from backfill_assets.engine.model.cells import SkipKind
from backfill_assets.engine.model.graph import DeclaredAsset
from backfill_assets.engine.model.request_model import ReprocessPolicy, RequestSpec
from backfill_assets.engine.model.states import IN_PROGRESS, TERMINAL_FAILED, VersionState


class PlanAction(StrEnum):
    """What the driver does with a cell now (``Decision.action``; the dry run's ``PlannedCell.action``)."""

    CREATE = "create"
    SKIP = "skip"
    FOLLOW = "follow"  # another run has the interval in flight: wait for it and take its outcome


CREATE, SKIP, FOLLOW = PlanAction.CREATE, PlanAction.SKIP, PlanAction.FOLLOW


@dataclass(frozen=True)
class CellFacts:
    """What is true of one (asset, partition) right now."""

    latest_state: str | None = None  # state of the newest version of the cell, any run
    latest_version_id: str | None = None
    in_flight_run_id: str | None = None  # a queued or running Dagster run that will write this cell
    # The latest finished run that targeted the cell failed without leaving a version behind it (it died before
    # writing, or was cancelled): the cell "has a run" in Airflow's sense although the catalog has no version.
    failed_run_without_version: bool = False
    # The cell's skip mark, as its reason reads ("marked skipped by X: why"; ``backfill-assets skip``), or None.
    skip_mark: str | None = None


@dataclass(frozen=True)
class Decision:
    action: PlanAction
    reason: str
    skip_kind: SkipKind = SkipKind.DECIDED  # what a SKIP is: the policy's, or a person's mark
    # A step of a Dagster backfill that leaves a cell in flight elsewhere alone: the run whose outcome it takes.
    followed_run_id: str | None = None

    @property
    def label(self) -> str:
        return f"{self.action}: {self.reason}"


def decide(spec: RequestSpec, asset: DeclaredAsset, facts: CellFacts) -> Decision:
    """The decision for one cell of ``asset`` (the graph's spec of it) under the request ``spec``."""
    if asset.side_effect and not spec.side_effect_authorized(asset.name):
        return Decision(SKIP, "side effect not authorized")
    if facts.in_flight_run_id:
        # Never a duplicate of a queued or running interval, whatever the policy; and never "done" before that run
        # has published it: the cell follows the run and takes its outcome.
        return Decision(FOLLOW, f"in flight (run {facts.in_flight_run_id[:8]}): follows its outcome")
    state = VersionState(facts.latest_state) if facts.latest_state else None
    if asset.side_effect:
        return Decision(CREATE, "authorized side effect (outbox deduplicates)")
    if facts.skip_mark:
        # A person marked the cell: only a request that re-runs everything (completed) overrides the mark.
        if spec.reprocess != ReprocessPolicy.COMPLETED:
            return Decision(SKIP, facts.skip_mark, SkipKind.MARKED)
        return Decision(CREATE, f"reprocess=completed re-runs it although {facts.skip_mark}")
    if spec.reprocess == "completed":
        return Decision(CREATE, "reprocess=completed" if state else "no version yet")
    if spec.reprocess == "none":
        # Airflow's `none`: an interval that already has a run is left alone, whatever became of that run.
        if state is not None:
            return Decision(SKIP, f"has a version ({state.value})")
        if facts.failed_run_without_version:
            return Decision(SKIP, "has a run (it failed before writing a version); reprocess=none")
        return Decision(CREATE, "no run yet")
    if state is None:
        if facts.failed_run_without_version:
            return Decision(CREATE, "latest run failed before writing a version")
        if spec.only_failed:
            return Decision(SKIP, "no failed attempt (--only-failed)")
        return Decision(CREATE, "no version yet")
    # reprocess=failed: re-run what failed, was rejected, or died mid-write (no run is in flight for it).
    if state in TERMINAL_FAILED or state in IN_PROGRESS:
        return Decision(CREATE, f"latest attempt {state.value}")
    return Decision(SKIP, f"latest attempt {state.value}")


def run_key(request_id: str, partition: str, round_no: int = 1) -> str:
    return f"{request_id}/{partition}/{round_no}"
