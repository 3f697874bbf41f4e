"""Scenario 3: after the demo's defect day, a UI user sees why 2022-10-17 still serves the old version.

daily_revenue 2022-10-17 is published once (the good production version), then recomputed with the demo's defect
(``defect: drop_rows``, the defects plug-in): the blocking checks ``row_count`` and ``business_totals`` reject
the new version.
On the asset's Checks tab, business_totals' execution history shows the failed result for that day (naming the
rejected version; it targets no materialization, Dagster having none of an unpublished version); on its partitions
page the day is Failed and its latest materialization shows the first version's id, the one the catalog still
serves, with the rejected version beside it (``rejected_version_id``).
"""

from __future__ import annotations

import re

import dagster as dg
import pytest
from playwright.sync_api import expect

from backfill_assets.engine.model.states import VersionState
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS

from .conftest import UI, BrowserE2E

pytestmark = [pytest.mark.browser, pytest.mark.daemon, pytest.mark.xdist_group("browser")]

DAY, OTHER_DAY = "2022-10-17", "2022-10-18"
DEFECT = {"ops": {DAILY_REVENUE: {"config": {"defect": "drop_rows"}}}}
REJECTED_BY = "business_totals"  # one of the checks the defect fails (row_count is the other)
PASSED = "schema_matches"  # one the rejected version passed


def test_the_checks_tab_shows_the_failed_check_and_the_asset_page_the_version_still_serving(e2e: BrowserE2E, ui: UI):
    e2e.prepare([DAY], [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE])
    serving = e2e.catalog.current(DAILY_REVENUE, DAY).version_id
    # Another day, published between the serving version and the defect: its checks' statuses are what the
    # Checks list shows (DAY, still served by an older version, has none), and the attempt starts seconds after
    # the serving version's materialization, as a recompute does in real use.
    for asset in (RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE):  # three runs: the attempt starts well after DAY's
        e2e.prepare([OTHER_DAY], [asset])
    e2e.prepare([DAY], [DAILY_REVENUE], run_config_for={DAY: DEFECT}, expect_success=False)
    first, rejected = e2e.catalog.versions_of(DAILY_REVENUE, DAY)
    assert (first.version_id, first.state, rejected.state) == (serving, VersionState.PUBLISHED, VersionState.REJECTED)
    assert e2e.catalog.current(DAILY_REVENUE, DAY).version_id == serving
    page = ui.page

    # The Checks list: every check Succeeded (OTHER_DAY's status), the checks that rejected DAY's attempt too.
    # A check's Overview, "Evaluation result": the rejected attempt's own result (Failed, or Passed for a check it
    # passed), as long as its run started in a later second than the serving version's materialization (Dagster
    # compares a result without a target by its start, stored in whole seconds; else Not evaluated).
    ui.goto_asset(DAILY_REVENUE, "checks")
    for check, result in ((PASSED, "Passed"), (REJECTED_BY, "Failed")):
        listed = page.get_by_title(check, exact=True).first
        expect(listed.locator("xpath=..")).to_contain_text("Succeeded")
        listed.click()
        shown = result if started_after_the_serving_materialization(e2e, check, rejected.dagster_run_id) else (
            "Not evaluated")
        evaluation = page.get_by_text("Evaluation result", exact=True).locator("xpath=..")
        expect(evaluation).to_contain_text(shown)
    ui.screenshot("3-checks-overview")

    # The Checks tab → business_totals → Execution history: the failed result for 2022-10-17 names the rejected
    # version and the one still serving, and targets no materialization (the version never published); the
    # serving version's passed result targets its materialization.
    page.get_by_role("tab", name="Execution history").click()
    failed = page.get_by_role("row").filter(has_text="Failed").filter(has_text=DAY)
    expect(failed).to_have_count(1)
    expect(failed).to_contain_text(f"judged unpublished version {rejected.version_id}")
    passed = page.get_by_role("row").filter(has_text="Passed").filter(has_text=DAY)
    expect(passed).to_have_count(1)
    ui.screenshot("3-checks-tab")

    # The asset's partition 2022-10-17: Failed in the partitions' health, its latest materialization the first
    # version (still serving), the rejected one beside it as an observation.
    ui.goto_asset(DAILY_REVENUE, "partitions", partition=DAY)
    expect(page.get_by_text("Latest materialization", exact=True)).to_be_visible()
    expect(page.get_by_text(re.compile(r"^Failed \(1\)$"))).to_be_visible()
    # Side by side: the green Materialized tag (the version still serving) and the red banner of the failed run
    # (the rejected attempt), linking to that run.
    expect(page.get_by_text("Materialized", exact=True).first).to_be_visible()
    banner = page.get_by_text("failed, and did not materialize this asset.").locator("xpath=..")
    expect(banner).to_be_visible()
    expect(banner.locator(f'a[href="/runs/{rejected.dagster_run_id}"]')).to_be_visible()
    for key, version in (("version_id", serving), ("rejected_version_id", rejected.version_id)):
        row = page.get_by_role("row").filter(has=page.get_by_text(key, exact=True))
        expect(row.first).to_contain_text(version)
    # The picture: the serving version's entries (below the rejected one's, which Dagster lists first).
    page.get_by_role("row").filter(has=page.get_by_text("version_id", exact=True)).first.scroll_into_view_if_needed()
    ui.screenshot("3-serving-version")


def started_after_the_serving_materialization(e2e: BrowserE2E, check: str, run_id: str) -> bool:
    """Whether the newest execution of ``check`` (the rejected attempt's, run ``run_id``) was created in a later
    second than DAY's latest materialization: Dagster's rule for showing a result without a target."""
    key = dg.AssetCheckKey(dg.AssetKey(DAILY_REVENUE), check)
    [latest] = e2e.instance.event_log_storage.get_asset_check_execution_history(key, limit=1)
    [materialization] = e2e.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(DAILY_REVENUE), asset_partitions=[DAY]), limit=1).records
    assert latest.run_id == run_id, latest
    return latest.create_timestamp > materialization.timestamp
