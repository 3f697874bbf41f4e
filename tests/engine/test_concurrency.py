"""The concurrency a request really gets: its max_active, or the run queue's lower limit, and why."""

from __future__ import annotations

from pathlib import Path

import yaml

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.concurrency import RunLimit, effective_concurrency, run_limits
from backfill_assets.engine.model.settings import PACKAGE_DIR

BACKFILL_RUN = {T.LANE: T.LANE_BACKFILL, T.REQUEST_ID: "req-1", T.TEAM: "team:ingestion"}


def run_queue_limits(home: Path) -> tuple[int | None, list[RunLimit]]:
    """The limits under ``concurrency.runs`` of ``home``'s dagster.yaml, the block the shipped files use. Only this
    test reads YAML: every door takes the limits from Dagster's instance (tests/doors/test_door_records.py)."""
    runs = yaml.safe_load((home / "dagster.yaml").read_text(encoding="utf-8"))["concurrency"]["runs"]
    return runs.get("max_concurrent_runs"), run_limits(runs.get("tag_concurrency_limits"))


def test_the_products_dagster_yaml_runs_at_most_two_backfill_runs_at_once_and_says_why():
    max_runs, limits = run_queue_limits(PACKAGE_DIR.parent)
    wide = effective_concurrency(6, BACKFILL_RUN, max_runs, limits)
    assert wide.effective == 2
    assert "max_active 6, but at most 2 run(s)" in wide.note and "backfill/lane=backfill: 3" in wide.note
    assert "every backfill" in wide.note
    # One team's backfills share 2 of the lane's 3 runs: another team's request always finds one.
    assert "backfill/team: 2 per distinct value (per team" in wide.note
    assert effective_concurrency(2, BACKFILL_RUN, max_runs, limits).note is None


def test_on_the_products_dagster_yaml_the_team_limit_binds_and_the_note_says_where_to_raise_it():
    max_runs, limits = run_queue_limits(PACKAGE_DIR.parent)
    three = effective_concurrency(3, BACKFILL_RUN, max_runs, limits, "/home/dagster.yaml")
    # No per-request limit of its own: the request's slots hold it to max_active, the team's limit binds.
    assert three.effective == 2 and three.reasons == three.binding == (
        "tag limit backfill/team: 2 per distinct value (per team, shared by the team's every backfill)",
    )
    assert three.raise_in == "concurrency.runs.tag_concurrency_limits in /home/dagster.yaml"
    assert three.note.endswith("bound by " + three.binding[0] + "; to run more at once, raise it under "
                               "concurrency.runs.tag_concurrency_limits in /home/dagster.yaml")
    assert three.as_dict() == {"max_active": 3, "effective": 2, "bound_by": list(three.binding),
                               "raise_in": three.raise_in, "note": three.note}
    # The team raised to the lane's limit: the request runs its max_active, up to the lane's 3.
    raised = [RunLimit(T.TEAM, 3, per_value=True) if limit.key == T.TEAM else limit for limit in limits]
    assert effective_concurrency(3, BACKFILL_RUN, max_runs, raised).as_dict() == {
        "max_active": 3, "effective": 3, "bound_by": [], "raise_in": None, "note": None}
    lane = effective_concurrency(5, BACKFILL_RUN, max_runs, raised, "the instance's run queue")
    assert lane.effective == 3 and [b.split(":")[0] for b in lane.binding] == [
        "tag limit backfill/lane=backfill", "tag limit backfill/team"]
    assert lane.note.endswith("raise them under concurrency.runs.tag_concurrency_limits in the instance's "
                              "dagster.yaml")


def test_a_home_that_kept_the_old_per_request_limit_is_told_it_binds():
    limits = [RunLimit(T.LANE, 3, value=T.LANE_BACKFILL), RunLimit(T.TEAM, 3, per_value=True),
              RunLimit(T.REQUEST_ID, 2, per_value=True)]
    kept = effective_concurrency(3, BACKFILL_RUN, 4, limits)
    assert kept.effective == 2 and kept.binding == ("tag limit backfill/request_id: 2 per distinct value "
                                                    "(per request)",)
    assert "also below" not in kept.note


def test_the_lowest_limit_wins_and_every_lower_limit_is_named():
    limits = [
        RunLimit(T.LANE, 4, value=T.LANE_BACKFILL),
        RunLimit(T.REQUEST_ID, 3, per_value=True),
        RunLimit(T.LANE, 1, value=T.LANE_PRODUCTION),  # another lane: does not apply
        RunLimit(T.SLOT, 1, per_value=True),  # the driver's own slots: never lowers max_active
    ]
    result = effective_concurrency(8, BACKFILL_RUN, 10, limits)
    assert result.effective == 3
    assert len(result.reasons) == 2 and "per request" in result.reasons[1]


def test_max_concurrent_runs_caps_every_request():
    assert effective_concurrency(5, BACKFILL_RUN, 1, []).effective == 1
