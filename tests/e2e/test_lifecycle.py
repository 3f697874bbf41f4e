"""A request's life in a real dagster-daemon: code-version block, overlapping requests, cancel."""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS

from .conftest import CODE_VERSION, FINISHED, poll

pytestmark = pytest.mark.daemon

BLOCK_DAY = "2022-09-20"
OVERLAP_A = ("2022-09-21", "2022-09-22")
OVERLAP_B = ("2022-09-22", "2022-09-23")


def test_request_frozen_under_another_code_version_is_blocked_and_submits_nothing(e2e):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BACKFILL_CODE_VERSION", "other-code")
        created = e2e.create("--assets", DAILY_REVENUE, "--from", BLOCK_DAY, "--to", BLOCK_DAY)
    rid = created["request_id"]
    assert created["code_version"] == "other-code"
    try:
        waited = e2e.wait(rid, expect_exit=1)
        assert waited["status"] == "blocked" and not waited["timed_out"]
        shown = e2e.show(rid)
        assert shown["status"] == "blocked"
        assert f"code version changed (frozen other-code, loaded {CODE_VERSION})" in shown["message"], shown

        assert [c["decision"] for c in shown["cells"]] == ["pending"]
        assert e2e.run_records(rid) == []
    finally:
        cancelled = e2e.cli_json("request", "cancel", rid)
    assert cancelled["status"] == "cancelled" and cancelled["terminated_runs"] == []
    assert e2e.show(rid)["status"] == "cancelled"


def test_overlapping_request_is_refused_naming_the_holder_or_waits_for_it(e2e):
    e2e.prepare(["2022-09-21", "2022-09-22", "2022-09-23"], [RAW_ORDERS, ORDER_FACTS])
    # Two intervals one at a time: A stays open for at least two driver ticks (~10 s) while B is tried.
    a = e2e.create(
        "--assets", DAILY_REVENUE, "--from", OVERLAP_A[0], "--to", OVERLAP_A[1], "--max-active", "1",
        "--reprocess", "completed",
    )["request_id"]

    before = e2e.ledger_request_ids()
    refused = e2e.cli("request", "create", "--assets", DAILY_REVENUE, "--from", OVERLAP_B[0], "--to", OVERLAP_B[1])
    assert refused.exit_code == 2, refused.output
    lines = [line for line in refused.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), refused.output
    assert a in lines[0] and f"{DAILY_REVENUE} 2022-09-22" in lines[0], lines[0]
    assert "2022-09-23" not in lines[0] and "Traceback" not in refused.output
    # Nothing of B was written: no request, no cells, no claims.
    assert e2e.ledger_request_ids() == before

    b_created = e2e.create(
        "--assets", DAILY_REVENUE, "--from", OVERLAP_B[0], "--to", OVERLAP_B[1], "--wait-for-overlap",
        "--reprocess", "completed",
    )
    b = b_created["request_id"]
    assert b_created["status"] == "waiting" and a in b_created["message"], b_created

    assert e2e.wait(a)["status"] == "completed"
    assert e2e.wait(b)["status"] == "completed"
    a_runs, b_runs = e2e.run_records(a), e2e.run_records(b)
    assert len(a_runs) == 2 and len(b_runs) == 2
    # B opened only after A had finished: none of B's runs was created before A's last run ended.
    assert min(r.start_time for r in b_runs) >= max(r.end_time for r in a_runs)


@pytest.mark.parametrize(
    "days, stage",
    [
        # Three days at --max-active 1: one run going, one queued behind it (queue-ahead), one never created.
        (("2022-09-25", "2022-09-27"), "submitted"),  # the run exists, not yet running
        (("2022-10-01", "2022-10-03"), "running"),  # the run worker has started
    ],
)
def test_cancel_stops_submission_and_leaves_no_run_queued_or_running(e2e, days, stage):
    e2e.prepare([days[0]], [RAW_ORDERS, ORDER_FACTS])
    # The first run's step holds until the cancel has been checked: a fast run would otherwise finish and let the
    # third day's run be created before the cancel, leaving no day that never ran.
    with e2e.holding_steps():
        rid = e2e.create(
            "--assets", DAILY_REVENUE, "--from", days[0], "--to", days[-1], "--max-active", "1",
            "--reprocess", "completed",
        )["request_id"]
        wanted = {dg.DagsterRunStatus.STARTED} if stage == "running" else set(dg.DagsterRunStatus) - FINISHED
        poll(
            lambda: any(r.dagster_run.status in wanted for r in e2e.run_records(rid)),
            60,
            f"the first run of the request to be {stage}",
            interval=0.1,
        )
        out = e2e.cli_json("request", "cancel", rid)
        assert out["status"] == "cancelled"
        runs_at_cancel = {r.dagster_run.run_id for r in e2e.run_records(rid)}
        assert runs_at_cancel

        shown = e2e.show(rid)
        assert shown["status"] == "cancelled"
        by_run = {c["dagster_run_id"]: c for c in shown["cells"] if c["dagster_run_id"]}
        assert set(by_run) == runs_at_cancel, shown["cells"]
        never_run = [c for c in shown["cells"] if not c["dagster_run_id"]]
        assert never_run
        assert all((c["decision"], c["reason"]) == ("cancelled", "request cancelled") for c in never_run), never_run

    # Driver ticks later: no new run, and none of the request's runs is queued or running.
    e2e.wait_driver_ticks(2)
    assert {r.dagster_run.run_id for r in e2e.run_records(rid)} == runs_at_cancel
    records = poll(
        lambda: (rs := e2e.run_records(rid)) and all(r.dagster_run.status in FINISHED for r in rs) and rs,
        30,
        "the request's runs to finish",
    )
    for record in records:
        run, cell = record.dagster_run, by_run[record.dagster_run.run_id]
        written = [v.state for v in e2e.catalog.versions_of(cell["asset"], cell["partition_key"])
                   if v.dagster_run_id == run.run_id]
        if run.run_id in out["terminated_runs"] or run.run_id in out["forced_runs"]:
            # Stopped by the cancel: its cell is cancelled, unless the step had published just before the
            # termination reached it (then the ledger says what the catalog serves). A terminated run ends
            # CANCELED. Dagster records FAILURE instead when the interrupt reaches a worker that never saw the run
            # CANCELING: a forced one (its worker did not confirm in time, under load, and was marked CANCELED), or
            # one whose RUN_START came after the termination request (its worker slower than the launcher's wait
            # for it); the cell says so.
            if run.status == dg.DagsterRunStatus.FAILURE and cell["decision"] == "cancelled":
                assert "(Dagster then ended the run FAILURE)" in cell["reason"], (cell, out)
            elif run.run_id not in out["forced_runs"]:
                assert run.status == dg.DagsterRunStatus.CANCELED, (run.status, out)
            assert cell["decision"] == ("published" if written == ["PUBLISHED"] else "cancelled"), (cell, written, out)
        else:
            # It had finished before the cancel reached it: the cell keeps its run's outcome.
            assert cell["decision"] in ("published", "failed", "rejected"), (cell, out)
    assert e2e.show(rid)["status"] == "cancelled"

