"""Scenario 1: a backfill launched from the asset's partitions page, exactly as a user clicks it, keeps
the reprocess policy of its launch tag.

order_facts over 2022-10-01..10-05: two days published, one rejected, two missing. The user opens Materialize…,
types the range, adds the tag ``backfill/reprocess=failed`` in the dialog's tags editor and launches. The backfill
is adopted as ``dg-<id>`` with that policy; the published days are left alone (the run log says why), the rejected
and missing days are published, and reconcile is exact.
"""

from __future__ import annotations

import re

import dagster as dg
import pytest
from playwright.sync_api import expect

from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.request_jobs import runs_filter_url

from .conftest import UI, BrowserE2E

pytestmark = [pytest.mark.browser, pytest.mark.daemon, pytest.mark.xdist_group("browser")]

DAYS = ["2022-10-01", "2022-10-02", "2022-10-03", "2022-10-04", "2022-10-05"]
PUBLISHED, REJECTED, MISSING = DAYS[:2], DAYS[2:3], DAYS[3:]
RANGE = "[2022-10-01...2022-10-05]"
TAG_KEY, TAG_VALUE = "backfill/reprocess", "failed"
DROP_ROWS = {"ops": {ORDER_FACTS: {"config": {"defect": "drop_rows"}}}}
SKIP_REASON = "latest attempt PUBLISHED (backfill/reprocess=failed)"
BACKFILL_COUNTS = """
query Counts($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    ... on PartitionBackfill {
      assetBackfillData {
        assetBackfillStatuses {
          ... on AssetPartitionsStatusCounts {
            numPartitionsTargeted numPartitionsMaterialized numPartitionsFailed
          }
        }
      }
    }
  }
}
"""


def launch_backfill_from_the_dialog(ui: UI) -> dict:
    """The user's clicks, from the partitions page to "Launch backfill"; returns the GraphQL exchange the dialog
    made (what it sent and the backfill id the server answered)."""
    page = ui.page
    expect(page.get_by_text(re.compile(r"Partitions Selected$"))).to_be_visible()  # the partitions' health loaded
    ui.screenshot("1-partitions-page")
    page.get_by_role("button", name="Materialize…").click()
    dialog = page.get_by_role("dialog").filter(has_text=f"Launch runs to materialize {ORDER_FACTS}")
    expect(dialog).to_be_visible()

    # The dialog starts on the last 90 days only (October 2022 is older) behind a "Show all partitions" notice; the
    # dialog of Dagster 1.13.0 starts on all time and has no notice.
    show_all, all_time = dialog.get_by_text("Show all partitions"), dialog.get_by_role("button", name="All time")
    expect(show_all.or_(all_time).first).to_be_visible()
    if show_all.is_visible():
        show_all.click()
    expect(all_time).to_be_visible()  # the keys the range is read against
    partition_range = dialog.get_by_role("textbox")
    partition_range.fill(RANGE)
    partition_range.press("Enter")  # the range is committed on Enter (or blur)
    expect(dialog.get_by_text(f"{len(DAYS)} partitions", exact=True)).to_be_visible()
    ui.screenshot("1-backfill-dialog")

    dialog.get_by_text("Tags", exact=True).click()  # a collapsed section
    dialog.get_by_role("button", name="Add tags").click()
    editor = page.get_by_role("dialog").filter(has_text="Add tags to run")
    expect(editor).to_be_visible()
    editor.get_by_placeholder("Tag Key").fill(TAG_KEY)
    editor.get_by_placeholder("Tag Value").fill(TAG_VALUE)
    ui.screenshot("1-backfill-tags-editor")
    editor.get_by_role("button", name="Apply").click()
    expect(editor).to_be_hidden()
    expect(dialog.get_by_text(f"{TAG_KEY}: {TAG_VALUE}")).to_be_visible()
    expect(dialog.get_by_text("1 tags", exact=True)).to_be_visible()
    ui.screenshot("1-backfill-tags")

    with page.expect_response(ui.graphql_response("LaunchPartitionBackfill")) as exchange:
        dialog.get_by_role("button", name="Launch backfill").click()
    response = exchange.value
    assert response.ok, response.text()
    expect(dialog).to_be_hidden()
    return {"sent": response.request.post_data_json["variables"], "answer": response.json()}


def test_a_backfill_launched_from_the_dialog_keeps_its_reprocess_policy(e2e: BrowserE2E, ui: UI):
    e2e.prepare(DAYS, [RAW_ORDERS])
    e2e.prepare(PUBLISHED, [ORDER_FACTS])
    e2e.prepare(REJECTED, [ORDER_FACTS], run_config_for={REJECTED[0]: DROP_ROWS}, expect_success=False)
    serving = {day: e2e.catalog.current(ORDER_FACTS, day).version_id for day in PUBLISHED}
    assert all(e2e.catalog.current(ORDER_FACTS, day) is None for day in REJECTED + MISSING)

    ui.goto_asset(ORDER_FACTS, "partitions")
    exchange = launch_backfill_from_the_dialog(ui)

    # What the dialog sent: the asset, the typed range as partition names and our tag (plus Dagster's
    # dagster/from_ui); the backfill Dagster created carries the tag.
    answer = exchange["answer"]["data"]["launchPartitionBackfill"]
    assert answer["__typename"] == "LaunchBackfillSuccess", answer
    sent = exchange["sent"]["backfillParams"]
    assert sent["assetSelection"] == [{"path": [ORDER_FACTS]}], sent
    assert sent["partitionNames"] == DAYS, sent
    assert {"key": TAG_KEY, "value": TAG_VALUE} in sent["tags"], sent
    backfill_id = answer["backfillId"]
    backfill = e2e.instance.get_backfill(backfill_id)
    assert backfill.tags.get(TAG_KEY) == TAG_VALUE, backfill.tags

    # Adopted as a request with the dialog's policy, then finished by the daemon.
    request_id = f"dg-{backfill_id}"
    listed = e2e.adopted(backfill_id)
    assert (listed["source"], listed["reprocess"], listed["assets"], listed["partitions"]) == (
        "dagster", TAG_VALUE, [ORDER_FACTS], DAYS,
    )
    e2e.wait(request_id)

    shown = e2e.show(request_id)
    assert shown["reprocess"] == TAG_VALUE
    cells = {c["partition_key"]: c for c in shown["cells"]}
    assert sorted(cells) == DAYS
    for day in PUBLISHED:
        assert (cells[day]["decision"], cells[day]["reason"]) == ("skipped", SKIP_REASON), cells[day]
        # Left alone: still exactly the one version it had, and its run's log says why.
        assert [v.version_id for v in e2e.catalog.versions_of(ORDER_FACTS, day)] == [serving[day]]
        assert f"not recomputed — {SKIP_REASON}" in e2e.run_log(cells[day]["dagster_run_id"])
    for day in REJECTED + MISSING:
        assert cells[day]["decision"] == "published", cells[day]
        current = e2e.catalog.current(ORDER_FACTS, day)
        assert current is not None and current.dagster_run_id == cells[day]["dagster_run_id"], (day, current)

    # Every run the dialog's backfill made carries the request and the code version frozen at its adoption.
    for day in DAYS:
        tags = e2e.instance.get_run_by_id(cells[day]["dagster_run_id"]).tags
        assert (tags.get(T.REQUEST_ID), tags.get(T.CODE_VERSION)) == (request_id, shown["code_version"]), tags

    report = e2e.cli_json("reconcile", request_id)
    totals = report["totals"]
    assert report["complete"] is True, report
    assert (totals["published"], totals["skipped"], totals["duplicate_publishes"], totals["gaps"]) == (3, 2, 0, 0)

    # The backfill's own page in the UI, finished.
    ui.goto_backfill(backfill_id)
    expect(ui.page.get_by_text("2022-10-01...2022-10-05", exact=True)).to_be_visible()
    expect(ui.page.get_by_role("link", name=ORDER_FACTS)).to_be_visible()
    expect(ui.page.get_by_text("100% completed", exact=True)).to_be_visible()
    ui.screenshot("1-backfill-finished")
    # What that page counts (the same GraphQL field it renders): the days left alone are materialized at the
    # version serving them, none Failed.
    [counts] = e2e.webserver.graphql(BACKFILL_COUNTS, {"id": backfill_id})["partitionBackfillOrError"][
        "assetBackfillData"]["assetBackfillStatuses"]
    assert (counts["numPartitionsTargeted"], counts["numPartitionsMaterialized"], counts["numPartitionsFailed"]) == (
        len(DAYS), len(DAYS), 0), counts
    for day in PUBLISHED:
        filter_ = dg.AssetRecordsFilter(asset_key=dg.AssetKey(ORDER_FACTS), asset_partitions=[day])
        [latest] = e2e.instance.fetch_materializations(filter_, limit=1).records
        metadata = {k: v.value for k, v in latest.asset_materialization.metadata.items()}
        assert latest.run_id == cells[day]["dagster_run_id"], (day, latest.run_id)
        assert (metadata["version_id"], metadata["recomputed"]) == (serving[day], False), metadata
    # Its Runs tab: one run per day, the skipped days' runs included (they succeed, having materialized nothing).
    ui.page.get_by_role("tab", name="Runs").click()
    for day in DAYS:
        run_link = ui.page.get_by_role("link", name=f"run {cells[day]['dagster_run_id'][:8]}", exact=True)
        expect(run_link).to_be_visible()
    ui.screenshot("1-backfill-runs")

    # The Runs page filtered by the request's tag: unticked, "Show runs within backfills" hides every run of the
    # backfill, so the filter finds none; ticked (view=runs, as the request's runs link opens it) it lists them.
    page = ui.page
    ui.goto(runs_filter_url(request_id).replace("&view=runs", ""))
    expect(page.get_by_label("Show runs within backfills")).not_to_be_checked()
    expect(page.get_by_text("No matching runs", exact=True)).to_be_visible()
    run_links = [page.get_by_role("link", name=f"run {cells[day]['dagster_run_id'][:8]}", exact=True) for day in DAYS]
    for run_link in run_links:
        expect(run_link).to_have_count(0)
    page.get_by_text("Show runs within backfills", exact=True).click()
    expect(page).to_have_url(re.compile(r"[?&]view=runs(&|$)"))
    for run_link in run_links:
        expect(run_link).to_be_visible()
