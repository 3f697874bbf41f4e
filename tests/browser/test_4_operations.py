"""Operations without a terminal: a request paused and resumed, and a rejected version accepted, each from its job's
Launchpad in the UI (``backfill_pause``, ``backfill_resume``, ``backfill_accept``), the result on the run's page
and in the catalog, the UI's user recorded as who acted when the config names nobody."""

from __future__ import annotations

import dagster as dg
import pytest
from playwright.sync_api import expect

from backfill_assets import backfills_for_instance
from backfill_assets.engine.store.pauses import Pauses
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.operation_jobs import op_name
from backfill_assets.service import RequestInput
from tests.orders import DEFS

from .conftest import UI, BrowserE2E

pytestmark = [pytest.mark.browser, pytest.mark.daemon, pytest.mark.xdist_group("browser")]

DAY = "2022-10-12"  # the paused request's
ACCEPTED_DAY = "2022-10-13"
DEFECT = {"ops": {DAILY_REVENUE: {"config": {"defect": "drop_rows"}}}}
RUN_TIMEOUT = 120.0


def launch_operation(ui: UI, e2e: BrowserE2E, job: str, config: dict[str, str], shot: str) -> dg.DagsterRun:
    """Write ``config`` in the job's Launchpad, launch, and return the run once it succeeded."""
    fields = "".join(f'      {key}: "{value}"\n' for key, value in config.items())
    run_id = ui.launch_from_launchpad(job, f"ops:\n  {op_name(job)}:\n    config:\n{fields}", shot, RUN_TIMEOUT)
    return e2e.instance.get_run_by_id(run_id)


def test_a_request_is_paused_and_resumed_from_the_launchpad(e2e: BrowserE2E, ui: UI):
    backfills = backfills_for_instance(DEFS, e2e.instance, e2e.catalog)
    # A holder that can never run: frozen on another build and left to the daemon's driver (no first tick here),
    # which blocks it on the code version. A runnable one could publish its day, and be completed, before the
    # pause below on a fast worker. Paused, it keeps its claim: the request below waits for it.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BACKFILL_CODE_VERSION", "an-earlier-build")
        holder = backfills_for_instance(DEFS, e2e.instance, e2e.catalog, first_tick=False).create(
            RequestInput(assets=[ORDER_FACTS], from_day=DAY, to_day=DAY, requested_by="ana"))
    backfills.pause(holder.request.request_id, by="ana", reason="hold the day")
    waiting = backfills.create(RequestInput(assets=[ORDER_FACTS], from_day=DAY, to_day=DAY, requested_by="ana",
                                            wait_for_overlap=True)).request.request_id
    assert backfills.progress(waiting).status == "waiting"

    launch_operation(ui, e2e, "backfill_pause", {"request_id": waiting, "reason": "warehouse maintenance"},
                     "4-launchpad-pause")
    expect(ui.page.get_by_text(f"{waiting} paused").first).to_be_visible()
    pause = Pauses(e2e.catalog).current([waiting])[waiting]
    assert (pause.reason, pause.status_before) == ("warehouse maintenance", "waiting")

    launch_operation(ui, e2e, "backfill_resume", {"request_id": waiting}, "4-launchpad-resume")
    assert backfills.progress(waiting).status == "waiting"
    assert [o.surface for o in backfills.show(waiting).operations] == ["python", "launchpad", "launchpad"]
    backfills.cancel(waiting)
    backfills.cancel(holder.request.request_id)


def test_a_rejected_version_is_accepted_from_the_launchpad(e2e: BrowserE2E, ui: UI):
    e2e.prepare([ACCEPTED_DAY], [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE])
    serving = e2e.catalog.current(DAILY_REVENUE, ACCEPTED_DAY).version_id
    e2e.prepare([ACCEPTED_DAY], [DAILY_REVENUE], run_config_for={ACCEPTED_DAY: DEFECT}, expect_success=False)
    rejected = e2e.catalog.versions_of(DAILY_REVENUE, ACCEPTED_DAY)[-1]
    assert rejected.state == "REJECTED"

    launch_operation(ui, e2e, "backfill_accept", {"version_id": rejected.version_id, "approved_by": "ana",
                                                  "reason": "rows dropped on purpose: test orders"},
                     "4-launchpad-accept")
    expect(ui.page.get_by_text(f"accepted {rejected.version_id}").first).to_be_visible()
    now = e2e.catalog.current(DAILY_REVENUE, ACCEPTED_DAY)
    assert (now.version_id, now.state) == (rejected.version_id, "PUBLISHED")
    assert e2e.catalog.get(serving).state == "SUPERSEDED"
