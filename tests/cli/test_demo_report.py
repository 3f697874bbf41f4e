"""The demo's closing lines come from the catalog: the rejected version, its failed checks, what serves now."""

from __future__ import annotations

from backfill_assets.cli.demo_command import DEFECT_DAY, defect_day_outcome, describe_defect_day
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.examples.orders.domain import DAILY_REVENUE
from tests.engine.catalog_helpers import begin_verified, identity, published

REQUEST_ID = "req-20221101-0a0b0c0d"
FAILED = [{"name": "business_totals", "passed": False}, {"name": "row_count", "passed": True}]


def _versions(tmp_path) -> tuple[Catalog, str]:
    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    production = published(catalog, identity("run-prod", key=DEFECT_DAY, asset=DAILY_REVENUE))
    return catalog, production


def test_a_rejected_defect_day_names_the_rejected_version_its_failed_checks_and_the_serving_version(tmp_path):
    catalog, production = _versions(tmp_path)
    before = catalog.current(DAILY_REVENUE, DEFECT_DAY)
    rejected = begin_verified(catalog, identity("run-bf", key=DEFECT_DAY, asset=DAILY_REVENUE, request_id=REQUEST_ID))
    catalog.reject(rejected, FAILED, "blocking check(s) failed: business_totals")

    outcome = defect_day_outcome(catalog.versions_of(DAILY_REVENUE, DEFECT_DAY), REQUEST_ID, before,
                                 catalog.current(DAILY_REVENUE, DEFECT_DAY))

    assert outcome["rejected_version_id"] == rejected and outcome["failed_checks"] == ["business_totals"]
    assert outcome["serving_now"] == production and outcome["old_version_kept"] is True
    text = "\n".join(describe_defect_day(outcome))
    assert rejected in text and "business_totals" in text and production in text and "NOT" not in text


def test_a_defect_day_that_was_not_rejected_is_said_plainly(tmp_path):
    catalog, production = _versions(tmp_path)
    before = catalog.current(DAILY_REVENUE, DEFECT_DAY)
    new = published(catalog, identity("run-bf", key=DEFECT_DAY, asset=DAILY_REVENUE, request_id=REQUEST_ID))

    outcome = defect_day_outcome(catalog.versions_of(DAILY_REVENUE, DEFECT_DAY), REQUEST_ID, before,
                                 catalog.current(DAILY_REVENUE, DEFECT_DAY))

    assert outcome["rejected_version_id"] is None and outcome["old_version_kept"] is False
    [line] = describe_defect_day(outcome)
    assert "NOT rejected" in line and new in line and "still serving" not in line
