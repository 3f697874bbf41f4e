"""The driver sensor in a real dagster-daemon: max_active, order, tags, reprocess policies, in-flight cells."""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS

from .conftest import CODE_VERSION, launch_held_run, poll

pytestmark = pytest.mark.daemon

WEEK = [f"2022-09-0{d}" for d in range(1, 8)]


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The largest number of [start, end] intervals that share an instant."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    current = peak = 0
    for _, delta in events:
        current += delta
        peak = max(peak, current)
    return peak


def test_max_active_2_backward_never_has_more_than_2_runs_in_flight_and_tags_every_run(e2e):
    e2e.prepare(WEEK, [RAW_ORDERS, ORDER_FACTS])
    created = e2e.create(
        "--assets", DAILY_REVENUE, "--from", WEEK[0], "--to", WEEK[-1],
        "--max-active", "2", "--order", "backward", "--reprocess", "completed",
        "--partitions-per-run", "1",  # 7 days on 2 slots would batch under auto: this is about per-interval runs
    )
    rid = created["request_id"]
    assert created["status"] == "open" and created["code_version"] == CODE_VERSION

    done = e2e.wait(rid)
    assert done["status"] == "completed" and done["counts"]["published"] == 7

    records = e2e.run_records(rid)
    assert len(records) == 7, [r.dagster_run.tags.get(T.DAGSTER_PARTITION) for r in records]
    assert all(r.dagster_run.status.value == "SUCCESS" for r in records)
    spans = [(r.start_time, r.end_time) for r in records]
    assert all(s is not None and e is not None and s <= e for s, e in spans), spans
    assert max_overlap(spans) <= 2, spans

    # Submission order (creation time, then insertion order) is backward by partition.
    submitted = [r.dagster_run.tags[T.DAGSTER_PARTITION] for r in records]
    assert submitted == sorted(WEEK, reverse=True)

    for record in records:
        tags = record.dagster_run.tags
        assert tags[T.REQUEST_ID] == rid
        assert tags[T.CODE_VERSION] == CODE_VERSION
        assert tags[T.REPROCESS] == "completed"
        assert tags[T.DOWNSTREAM] == "none"
        assert tags[T.LANE] == T.LANE_BACKFILL
        assert tags[T.REQUESTED_BY] == "e2e-tester"
        assert tags[T.REQUESTED_AT] == created["requested_at"]
        assert tags[T.DAGSTER_PRIORITY] == "-5"
        assert [k.to_user_string() for k in record.dagster_run.asset_selection] == [DAILY_REVENUE]


# ---- reprocess policies on a prepared mix of published, rejected and missing cells ----------------------------

# (published, rejected, missing) days of order_facts, one triple per policy so the cases do not interfere.
POLICY_DAYS = {
    "none": ("2022-09-08", "2022-09-09", "2022-09-10"),
    "failed": ("2022-09-11", "2022-09-12", "2022-09-13"),
    "completed": ("2022-09-14", "2022-09-15", "2022-09-16"),
}
EXPECTED_RUNS = {
    "none": {"missing"},
    "failed": {"rejected", "missing"},
    "completed": {"published", "rejected", "missing"},
}
DROP_ROWS = {"ops": {ORDER_FACTS: {"config": {"defect": "drop_rows"}}}}
HELD_DAY = "2022-09-17"


def latest_state(e2e, asset: str, day: str) -> str | None:
    versions = e2e.catalog.versions_of(asset, day)
    return max(versions, key=lambda v: v.created_at).state if versions else None


def test_each_reprocess_policy_runs_exactly_the_expected_cells_as_its_dry_run_predicted(e2e):
    # Three requests, one per policy, on disjoint days, driven at the same time by the one daemon.
    for published, rejected, missing in POLICY_DAYS.values():
        e2e.prepare([published], [RAW_ORDERS, ORDER_FACTS])
        e2e.prepare([rejected], [RAW_ORDERS, ORDER_FACTS], run_config_for={rejected: DROP_ROWS}, expect_success=False)
        e2e.prepare([missing], [RAW_ORDERS])
        assert [latest_state(e2e, ORDER_FACTS, d) for d in (published, rejected, missing)] == [
            "PUBLISHED", "REJECTED", None,
        ]

    plans, expected, request_ids = {}, {}, {}
    for policy, (published, rejected, missing) in POLICY_DAYS.items():
        args = ("--assets", ORDER_FACTS, "--from", published, "--to", missing, "--reprocess", policy)
        before = e2e.ledger_rows()
        plan = e2e.dry_run(*args)
        assert e2e.ledger_rows() == before, f"{policy}: the dry run wrote to the ledger"
        plans[policy] = {(c["asset"], c["partition_key"]): (c["action"], c["reason"]) for c in plan}
        kinds = {"published": published, "rejected": rejected, "missing": missing}
        expected[policy] = {(ORDER_FACTS, kinds[k]) for k in EXPECTED_RUNS[policy]}
    for policy, (published, _, missing) in POLICY_DAYS.items():
        args = ("--assets", ORDER_FACTS, "--from", published, "--to", missing, "--reprocess", policy)
        request_ids[policy] = e2e.create(*args)["request_id"]
    for rid in request_ids.values():
        e2e.wait(rid)

    for policy, rid in request_ids.items():
        creates = {cell for cell, (action, _) in plans[policy].items() if action == "create"}
        assert creates == expected[policy], f"dry run of reprocess={policy}"
        # The driver did what the dry run said, on the same state: runs for exactly the `create` cells ...
        assert e2e.run_cells(rid) == creates, f"runs of reprocess={policy}"
        # ... and skipped the other cells for the reason the dry run gave.
        cells = {(c["asset"], c["partition_key"]): c for c in e2e.show(rid)["cells"]}
        for cell, (action, reason) in plans[policy].items():
            row = cells[cell]
            if action == "create":
                assert row["decision"] == "published" and row["dagster_run_id"], (policy, row)
            else:
                assert (row["decision"], row["reason"]) == ("skipped", reason), (policy, row)
        assert all(latest_state(e2e, ORDER_FACTS, d) == "PUBLISHED" for _, d in creates), policy


@pytest.fixture
def held(e2e):
    """A real queued run of the day that the run queue never starts; cancelled after the test if still queued."""
    run = launch_held_run(e2e, HELD_DAY)
    yield run
    if e2e.instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.QUEUED:
        e2e.instance.report_run_canceled(e2e.instance.get_run_by_id(run.run_id))


def test_cell_with_a_queued_run_is_never_duplicated_and_follows_that_run(e2e, held):
    """Another run (here held in the queue) has the day in flight: the request never duplicates it and is not
    done while that run has not published: the cell follows it. The held run is then cancelled: nothing wrote the
    day, so the cell is decided again, runs, publishes, and only then does the request complete."""
    args = ("--assets", f"{RAW_ORDERS},{ORDER_FACTS}", "--from", HELD_DAY, "--to", HELD_DAY, "--reprocess", "completed")
    follows = f"in flight (run {held.run_id[:8]}): follows its outcome"
    assert [(c["action"], c["reason"]) for c in e2e.dry_run(*args)] == [("follow", follows)] * 2
    rid = e2e.create(*args)["request_id"]
    poll(lambda: {c["decision"] for c in e2e.show(rid)["cells"]} == {"following"}, 60, "both cells follow the held run")
    shown = e2e.show(rid)
    assert shown["status"] == "open" and {c["dagster_run_id"] for c in shown["cells"]} == {held.run_id}, shown
    e2e.wait(rid, expect_exit=3, timeout="3")  # still open while the followed run is queued: not done
    assert e2e.run_records(rid) == []
    runs = e2e.instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_PARTITION: HELD_DAY}))
    assert [(r.run_id, r.status) for r in runs] == [(held.run_id, dg.DagsterRunStatus.QUEUED)]
    e2e.instance.report_run_canceled(e2e.instance.get_run_by_id(held.run_id))
    e2e.wait(rid)  # the cells were decided again, ran and published: only now is the request done
    assert {c["decision"] for c in e2e.show(rid)["cells"]} == {"published"} and len(e2e.run_records(rid)) == 1
