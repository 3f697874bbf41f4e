"""The published table after ``reconcile --repair`` of a version that was replaced since it lost its event."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from backfill_assets.engine.model.settings import TableSettings, code_version
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.tables.iceberg_table import IcebergTables
from backfill_assets.engine.wap.faults import AFTER_PUBLISH_COMMIT, ENV_FAULT
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_tags_for
from tests.orders import GRAPH, run_partitions

from .test_reconcile import REPO, _create, _reconcile, invoke

DAY = "2022-09-02"


def table_files(env) -> list[str]:
    table = IcebergTables(TableSettings.from_env(env.settings)).load(ORDER_FACTS)
    return [task.file.file_path for task in table.scan().plan_files()]


def test_repairing_a_replaced_version_leaves_the_table_on_the_serving_one(env):
    assert run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])[0].success
    request_id = _create("--assets", ORDER_FACTS, "--from", DAY, "--to", DAY)
    record = Ledger(env.catalog).get(request_id)
    [submission] = drive_request(GRAPH, env.instance, env.catalog, record, code_version())
    args = {"partition": DAY, "assets": list(submission.assets),
            "tags": {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}}
    crashed = subprocess.run([sys.executable, "-m", "tests.crash_runner", json.dumps(args)], cwd=REPO,
                             env={**os.environ, ENV_FAULT: AFTER_PUBLISH_COMMIT}, capture_output=True, timeout=120)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    lost_event = env.catalog.current(ORDER_FACTS, DAY)
    # The day re-run at another rate before anyone repaired the lost event: the new version serves, in the table too.
    rates = {DAY: {"ops": {ORDER_FACTS: {"config": {"usd_to_cny": 7.5}}}}}
    assert run_partitions(env.instance, [DAY], assets=[ORDER_FACTS], run_config_for=rates)[0].success
    serving = env.catalog.current(ORDER_FACTS, DAY)
    assert serving.version_id != lost_event.version_id and table_files(env) == [serving.path]

    repaired = _reconcile(request_id, "--repair")

    assert {"version_id": lost_event.version_id, "action": "recorded materialization"} in repaired["repaired"]
    assert env.catalog.current(ORDER_FACTS, DAY).version_id == serving.version_id
    shown = invoke("tables", "--asset", ORDER_FACTS)
    assert shown.exit_code == 0 and "in line" in shown.output, shown.output
    # The next sync (the daemon's pass, a step's) finds nothing to switch: the repair moved no pointer.
    synced = invoke("tables", "sync", "--asset", ORDER_FACTS)
    assert synced.exit_code == 0, synced.output
    assert table_files(env) == [serving.path], "the repair's log row switched the table back to the replaced version"
