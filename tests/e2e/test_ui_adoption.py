"""A backfill launched through a dagster-webserver's GraphQL API becomes request dg-<id> in the ledger."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS

from .conftest import Webserver, stop_process

pytestmark = pytest.mark.daemon

DAYS = ["2022-09-29", "2022-09-30"]
ADOPTION_TIMEOUT = 30.0

LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
    ... on PartitionSetNotFoundError { message }
    ... on RunConflict { message }
    ... on ConflictingExecutionParamsError { message }
    ... on NoModeProvidedError { message }
  }
}
"""
CANCEL = """
mutation Cancel($id: String!) { cancelPartitionBackfill(backfillId: $id) { __typename } }
"""


@pytest.fixture
def webserver(e2e):
    server = Webserver(e2e.home)
    try:
        server.wait_ready()
        yield server
    finally:
        stop_process(server.proc)


def test_backfill_launched_from_the_dagster_ui_is_adopted_as_a_request_with_its_cells(e2e, webserver):
    launched = webserver.graphql(
        LAUNCH,
        {
            "params": {
                "assetSelection": [{"path": [DAILY_REVENUE]}],
                "partitionNames": DAYS,
                "tags": [],
                "title": "ui backfill",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    request_id = f"dg-{launched['backfillId']}"
    try:
        deadline = time.monotonic() + ADOPTION_TIMEOUT
        listed: dict = {}
        while time.monotonic() < deadline and not listed:
            listed = {r["request_id"]: r for r in e2e.cli_json("request", "list")}.get(request_id) or {}
            if not listed:
                time.sleep(1)
        assert listed, f"{request_id} was not adopted within {ADOPTION_TIMEOUT} s"
        assert listed["source"] == "dagster"
        assert listed["assets"] == [DAILY_REVENUE] and listed["partitions"] == DAYS

        shown = e2e.show(request_id)
        assert shown["source"] == "dagster"
        assert sorted((c["asset"], c["partition_key"]) for c in shown["cells"]) == [(DAILY_REVENUE, d) for d in DAYS]
        assert shown["counts"]["planned"] == len(DAYS)

        # `request cancel` on the adopted request cancels the Dagster backfill itself, not just the ledger row.
        cancelled = e2e.cli_json("request", "cancel", request_id)
        assert cancelled["dagster_backfill_status"] in ("CANCELING", "CANCELED"), cancelled
        assert e2e.instance.get_backfill(launched["backfillId"]).status.value in ("CANCELING", "CANCELED")
        assert e2e.show(request_id)["status"] == "cancelled"
        # terminate_request_runs returned only once none of the backfill's runs was queued or running.
        in_flight = [r for r in e2e.instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": launched["backfillId"]}))
                     if not r.is_finished]
        assert in_flight == []
    finally:
        if e2e.instance.get_backfill(launched["backfillId"]).status.value not in ("CANCELING", "CANCELED"):
            webserver.graphql(CANCEL, {"id": launched["backfillId"]})


POLICY_DAYS = ["2022-09-28", "2022-09-29", "2022-09-30"]  # published, rejected, missing (order_facts)
DROP_ROWS = {"ops": {ORDER_FACTS: {"config": {"inject_defect": "drop_rows"}}}}


def test_a_ui_backfill_keeps_its_reprocess_policy(e2e, webserver):
    published, rejected, missing = POLICY_DAYS
    e2e.prepare(POLICY_DAYS, [RAW_ORDERS])
    e2e.prepare([published], [ORDER_FACTS])
    e2e.prepare([rejected], [ORDER_FACTS], run_config_for={rejected: DROP_ROWS}, expect_success=False)
    serving = e2e.catalog.current(ORDER_FACTS, published).version_id

    # What the dialog sends when the user adds the tag backfill/reprocess=failed.
    launched = webserver.graphql(
        LAUNCH,
        {
            "params": {
                "assetSelection": [{"path": [ORDER_FACTS]}],
                "partitionNames": POLICY_DAYS,
                "tags": [{"key": "backfill/reprocess", "value": "failed"}],
                "title": "ui backfill, reprocess failed",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    request_id = f"dg-{launched['backfillId']}"
    deadline = time.monotonic() + ADOPTION_TIMEOUT
    while request_id not in {r["request_id"] for r in e2e.cli_json("request", "list")}:
        assert time.monotonic() < deadline, f"{request_id} was not adopted within {ADOPTION_TIMEOUT} s"
        time.sleep(1)
    e2e.wait(request_id)

    shown = e2e.show(request_id)
    assert shown["reprocess"] == "failed"
    cells = {c["partition_key"]: c for c in shown["cells"]}
    assert cells[published]["decision"] == "skipped"
    assert cells[published]["reason"] == "latest attempt PUBLISHED (backfill/reprocess=failed)"
    assert (cells[rejected]["decision"], cells[missing]["decision"]) == ("published", "published")
    # The published day kept its version: the step left it alone, wrote nothing and said why in the run's log.
    assert [v.version_id for v in e2e.catalog.versions_of(ORDER_FACTS, published)] == [serving]
    skipped_run = cells[published]["dagster_run_id"]
    logs = " ".join(r.user_message for r in e2e.instance.all_logs(skipped_run))
    assert "not recomputed — latest attempt PUBLISHED (backfill/reprocess=failed)" in logs

    report = e2e.cli_json("reconcile", request_id)
    totals = report["totals"]
    assert report["complete"] is True
    assert (totals["published"], totals["skipped"], totals["duplicate_publishes"], totals["gaps"]) == (2, 1, 0, 0)
