"""Scenario 3 of issue 12: after the demo's defect day, a UI user sees why 2022-10-17 still serves the old version.

daily_revenue 2022-10-17 is published once (the good production version), then recomputed with the demo's defect
(``inject_defect: drop_rows``): the blocking checks ``row_count`` and ``business_totals`` reject the new version.
On the asset's Checks tab the failed check shows for that day; on its partitions page the materialization of
2022-10-17 shows the first version's id, the one the catalog still serves.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from backfill_assets.engine.model.states import VersionState
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS

from .conftest import UI, BrowserE2E

pytestmark = [pytest.mark.browser, pytest.mark.daemon, pytest.mark.xdist_group("browser")]

DAY = "2022-10-17"
DEFECT = {"ops": {DAILY_REVENUE: {"config": {"inject_defect": "drop_rows"}}}}
FAILED_CHECKS = ("business_totals", "row_count")  # drop_rows loses a region: its rows and its revenue
PASSED_CHECKS = ("file_integrity", "primary_key_unique", "schema_matches")
BUSINESS_TOTALS_FAILURE = re.compile(r"revenue_cny [\d.]+ != expected [\d.]+")


def test_the_checks_tab_shows_the_failed_check_and_the_asset_page_the_version_still_serving(e2e: BrowserE2E, ui: UI):
    e2e.prepare([DAY], [RAW_ORDERS])
    e2e.prepare([DAY], [ORDER_FACTS])
    e2e.prepare([DAY], [DAILY_REVENUE])
    serving = e2e.catalog.current(DAILY_REVENUE, DAY).version_id
    e2e.prepare([DAY], [DAILY_REVENUE], run_config_for={DAY: DEFECT}, expect_success=False)
    first, rejected = e2e.catalog.versions_of(DAILY_REVENUE, DAY)
    assert (first.version_id, first.state, rejected.state) == (serving, VersionState.PUBLISHED, VersionState.REJECTED)
    assert e2e.catalog.current(DAILY_REVENUE, DAY).version_id == serving
    page = ui.page

    # The Checks tab: the five blocking checks; the two the defect breaks are Failed.
    ui.goto_asset(DAILY_REVENUE, "checks")
    for check, status in [*((c, "Failed") for c in FAILED_CHECKS), *((c, "Succeeded") for c in PASSED_CHECKS)]:
        # A check's row in the list: its name (a title) and, beside it, its latest status.
        expect(page.get_by_title(check, exact=True).first.locator("xpath=..")).to_contain_text(status)
    page.get_by_title("business_totals", exact=True).first.click()
    latest = page.locator("div").filter(has=page.get_by_text("Evaluation result", exact=True)).filter(
        has=page.get_by_text("Partition", exact=True)
    ).last
    expect(latest).to_contain_text("Failed")
    expect(latest).to_contain_text(DAY)
    expect(page.get_by_text(BUSINESS_TOTALS_FAILURE).first).to_be_visible()
    ui.screenshot("3-checks-tab")

    # The same check for the day itself: its Partitions tab, filtered to 2022-10-17.
    page.get_by_role("tab", name="Partitions").and_(page.locator("button")).click()  # the check's tab, not the asset's
    page.get_by_placeholder("Filter by partition").fill(DAY)
    page.get_by_title(DAY, exact=True).first.click()
    detail = page.locator("div").filter(has=page.get_by_text("Latest execution", exact=True)).filter(
        has=page.get_by_text("Description", exact=True)
    ).last
    expect(detail).to_contain_text(DAY)
    expect(detail).to_contain_text("Failed")
    expect(detail.get_by_text(BUSINESS_TOTALS_FAILURE)).to_be_visible()
    ui.screenshot("3-check-of-the-day")

    # The asset's partition 2022-10-17: its latest materialization is the first version, still serving.
    ui.goto_asset(DAILY_REVENUE, "partitions", partition=DAY)
    expect(page.get_by_text("Latest materialization", exact=True)).to_be_visible()
    version_rows = page.get_by_role("row").filter(has=page.get_by_text("version_id", exact=True))
    expect(version_rows.filter(has_text=serving).first).to_be_visible()
    ui.screenshot("3-serving-version")
