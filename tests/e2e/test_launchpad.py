"""A request made without a terminal: the backfill_request job launched as the Launchpad (or `dagster job launch`)
does, carried out by the driver in a real dagster-daemon, and its report run launched when it closes."""

from __future__ import annotations

import json
import subprocess

import dagster as dg
import pytest

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.request_jobs import REPORT_JOB, REQUEST_JOB, REQUEST_OP
from tests.orders import MODULE as CODE_LOCATION_MODULE

from .conftest import dagster_env, poll, report_outputs

pytestmark = pytest.mark.daemon

DAY = "2022-10-10"
REPORT_TIMEOUT = 120.0


def launch_job(job: str, op: str, config: dict) -> None:
    launched = subprocess.run(
        [dagster_bin("dagster"), "job", "launch", "-m", CODE_LOCATION_MODULE, "-j", job,
         "--config-json", json.dumps({"ops": {op: {"config": config}}})],
        env=dagster_env(), capture_output=True, text=True, timeout=120,
    )
    assert launched.returncode == 0, launched.stdout + launched.stderr


def test_a_launchpad_request_is_carried_out_and_reported_in_the_ui(e2e):
    e2e.prepare([DAY], [RAW_ORDERS])
    before = {r.request_id for r in Ledger(e2e.catalog).list()}
    launch_job(REQUEST_JOB, REQUEST_OP, {"assets": [ORDER_FACTS], "from_day": DAY, "to_day": DAY,
                                         "reason": "from the Launchpad"})
    [record] = poll(
        lambda: [r for r in Ledger(e2e.catalog).list() if r.request_id not in before],
        REPORT_TIMEOUT,
        "the backfill_request run created a request",
    )
    assert record.source == "launchpad" and record.spec.reason == "from the Launchpad"
    e2e.wait(record.request_id)

    # The driver launched its report run once the request closed.
    [metadata] = report_outputs(e2e, record.request_id, REPORT_TIMEOUT, count=1)
    assert metadata["complete"] is True and metadata["published"] == 1
    assert f"| {DAY} | {ORDER_FACTS} | published |" in metadata["report"]
    # The request's own runs are found by one tag filter; the runs that show it, by another.
    [run] = e2e.instance.get_runs(dg.RunsFilter(tags={T.REQUEST_ID: record.request_id}))
    assert run.tags[T.DAGSTER_PARTITION] == DAY
    shown = {r.job_name for r in e2e.instance.get_runs(dg.RunsFilter(tags={T.REPORT_OF: record.request_id}))}
    assert shown == {REQUEST_JOB, REPORT_JOB}
