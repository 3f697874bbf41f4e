"""How ``request cancel`` settles a submitted cell from what happened to its run."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import Cell
from backfill_assets.engine.plan.cancelling import StoppedRuns, cancelled_cell
from backfill_assets.engine.plan.settling import RunView

RUN = "run-1"


def submitted() -> Cell:
    return Cell("req", "raw_orders", "2022-09-05", 0, "planned", M.SUBMITTED, run_key="key-1")


def run(status: str) -> RunView:
    return RunView(run_id=RUN, run_key="key-1", partition="2022-09-05", status=status)


def decide(status: str | None, version_state: str | None = None, asked=(), forced=None):
    stopped = StoppedRuns(ids=frozenset(asked), forced=forced or {})
    update = cancelled_cell(submitted(), run(status) if status else None, version_state, stopped)
    return update.values["decision"], update.values["reason"]


def test_a_run_marked_cancelled_whose_worker_then_failed_is_a_cancelled_cell():
    # Dagster writes a job failure for a run interrupted after it was marked CANCELED (not CANCELING): the
    # failure is the cancel's doing.
    why = "it was still CANCELING after 10 s"
    decision, reason = decide("FAILURE", "ABANDONED", asked=[RUN], forced={RUN: why})
    assert decision == M.CELL_CANCELLED
    assert reason == f"run marked cancelled: {why} (Dagster then ended the run FAILURE)"


def test_a_terminated_run_that_ended_failure_is_a_cancelled_cell():
    decision, reason = decide("FAILURE", asked=[RUN])
    assert decision == M.CELL_CANCELLED
    assert reason == "run terminated: request cancelled (Dagster then ended the run FAILURE)"


def test_a_run_that_failed_before_the_cancel_reached_it_stays_failed():
    decision, reason = decide("FAILURE", "ABANDONED")
    assert (decision, reason) == (M.FAILED, "run failure, version ABANDONED")


@pytest.mark.parametrize("asked", [(), (RUN,)])
def test_a_version_published_before_the_cancel_stays_published(asked):
    assert decide("SUCCESS", "PUBLISHED", asked=asked)[0] == M.PUBLISHED


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (None, "request cancelled before its run was created"),
        ("STARTED", "run still stopping"),
        ("CANCELED", "run terminated: request cancelled"),
    ],
)
def test_stopped_or_never_created_runs_are_cancelled_cells(status, reason):
    assert decide(status, asked=[RUN] if status else []) == (M.CELL_CANCELLED, reason)
