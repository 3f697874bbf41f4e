"""Scenario 2: a request made, watched and read without a terminal.

The user opens the ``backfill_request`` job's Launchpad, writes a request as config with ``dry_run: true``,
launches it and reads the plan on the run's page (its output metadata ``plan``); then launches it for real, watches
the request finish and opens its report (the ``backfill_report`` run the driver launches when it closes).
"""

from __future__ import annotations

import dagster as dg
import pytest
from playwright.sync_api import expect

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.request_jobs import REPORT_JOB, REQUEST_JOB, REQUEST_OP, runs_filter_url
from tests.e2e.conftest import report_outputs

from .conftest import UI, BrowserE2E

pytestmark = [pytest.mark.browser, pytest.mark.daemon, pytest.mark.xdist_group("browser")]

DAYS = ["2022-10-06", "2022-10-07", "2022-10-08"]
PUBLISHED = DAYS[:1]
REPORT_TIMEOUT = 180.0


def request_yaml(dry_run: bool) -> str:
    return (
        "ops:\n"
        f"  {REQUEST_OP}:\n"
        "    config:\n"
        f"      assets: [{ORDER_FACTS}]\n"
        f'      from_day: "{DAYS[0]}"\n'
        f'      to_day: "{DAYS[-1]}"\n'
        "      reprocess: failed\n"
        "      reason: FX fix from the Launchpad\n"
        f"      dry_run: {'true' if dry_run else 'false'}\n"
    )


def launch_from_the_launchpad(ui: UI, e2e: BrowserE2E, dry_run: bool, shot: str) -> dg.DagsterRun:
    """Write the config in the Launchpad's editor, launch, and return the run once it finished."""
    before = {r.run_id for r in e2e.instance.get_runs(dg.RunsFilter(job_name=REQUEST_JOB))}
    run_id = ui.launch_from_launchpad(REQUEST_JOB, request_yaml(dry_run), shot, REPORT_TIMEOUT)
    assert run_id not in before
    return e2e.instance.get_run_by_id(run_id)


def open_markdown(ui: UI, entry: str) -> None:
    """On a run's page: open the output's Markdown metadata ``entry`` (the event log's "[Show Markdown]")."""
    page = ui.page
    row = page.get_by_role("row").filter(has=page.get_by_text(entry, exact=True))
    # A long output's cell is truncated behind an "unfold" button that covers its last entry: the entry's own
    # action is what a user clicks after unfolding, dispatched directly here.
    row.get_by_text("[Show Markdown]").first.dispatch_event("click")
    expect(page.get_by_role("dialog")).to_be_visible()


def close_dialog(ui: UI) -> None:
    ui.page.keyboard.press("Escape")
    expect(ui.page.get_by_role("dialog")).to_be_hidden()


def test_a_request_is_launched_watched_and_read_in_the_ui(e2e: BrowserE2E, ui: UI):
    e2e.prepare(DAYS, [RAW_ORDERS])
    e2e.prepare(PUBLISHED, [ORDER_FACTS])
    requests_before = {r.request_id for r in Ledger(e2e.catalog).list()}
    page = ui.page

    # 1. The dry run: the plan on the run's page, nothing written.
    dry = launch_from_the_launchpad(ui, e2e, dry_run=True, shot="2-launchpad-dry-run")
    assert dry.status == dg.DagsterRunStatus.SUCCESS
    open_markdown(ui, "plan")
    plan = page.get_by_role("dialog")
    expect(plan).to_contain_text("Dry run: nothing was written")
    expect(plan).to_contain_text(f"{DAYS[0]}")
    expect(plan).to_contain_text("latest attempt PUBLISHED")
    ui.screenshot("2-dry-run-plan")
    close_dialog(ui)
    assert {r.request_id for r in Ledger(e2e.catalog).list()} == requests_before

    # 2. For real: the request is created (its id on the run's page), and the driver carries it out.
    created = launch_from_the_launchpad(ui, e2e, dry_run=False, shot="2-launchpad-request")
    [record] = [r for r in Ledger(e2e.catalog).list() if r.request_id not in requests_before]
    assert (record.source, record.spec.reason, created.tags[T.REPORT_OF]) == (
        "launchpad", "FX fix from the Launchpad", record.request_id
    )
    expect(page.get_by_text(f"Created {record.request_id}").first).to_be_visible()
    ui.screenshot("2-request-created")
    e2e.wait(record.request_id)

    # 3. Watch: the request's runs, by one tag filter: the link in the run's metadata ("Show runs within
    # backfills" ticked) and the same filter unticked both list them, the request belonging to no Dagster backfill.
    runs = e2e.instance.get_runs(dg.RunsFilter(tags={T.REQUEST_ID: record.request_id}))
    assert runs
    for url, ticked in ((runs_filter_url(record.request_id).replace("&view=runs", ""), False),
                        (runs_filter_url(record.request_id), True)):
        ui.goto(url)
        expect(page.get_by_label("Show runs within backfills")).to_be_checked(checked=ticked)
        for run in runs:
            expect(page.get_by_role("link", name=f"run {run.run_id[:8]}", exact=True)).to_be_visible()
    ui.screenshot("2-request-runs")

    # 4. Read: the report run the driver launched when the request closed.
    [report] = report_outputs(e2e, record.request_id, REPORT_TIMEOUT, count=1)
    assert report["complete"] is True and (report["published"], report["skipped"]) == (2, 1)
    [report_run] = e2e.instance.get_runs(dg.RunsFilter(job_name=REPORT_JOB, tags={T.REPORT_OF: record.request_id}))
    ui.goto_run(report_run.run_id)
    open_markdown(ui, "report")
    shown = page.get_by_role("dialog")
    expect(shown).to_contain_text(f"Request {record.request_id}: completed (complete)")
    expect(shown).to_contain_text("latest attempt PUBLISHED")
    ui.screenshot("2-request-report")
