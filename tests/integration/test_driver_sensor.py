"""The backfill_driver sensor itself, evaluated with Dagster's ``build_sensor_context`` on a real instance: the
run requests it yields carry the request's tags, run keys, job and partition, and a second evaluation with the
runs still missing re-requests the same keys (Dagster launches a key once)."""

from __future__ import annotations

import json

import dagster as dg
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.daemon_lease import DaemonLease, LeaseHolder
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from tests.orders import DEFS

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]


def _evaluate(env) -> list[dg.RunRequest]:
    context = dg.build_sensor_context(instance=env.instance, resources={"backfill": BackfillResource()})
    return list(DEFS.resolve_sensor_def(DRIVER_SENSOR)(context))


def test_the_driver_sensor_yields_tagged_run_requests_up_to_max_active(env):
    created = CliRunner().invoke(
        cli,
        ["request", "create", "--assets", DAILY_REVENUE, "--from", DAYS[0], "--to", DAYS[-1], "--max-active", "2",
         "--reprocess", "completed", "--requested-by", "sensor-test", "--json"],
        catch_exceptions=False,
    )
    request_id = json.loads(created.output)["request_id"]

    first = _evaluate(env)

    assert [r.partition_key for r in first] == DAYS[:2]
    for run_request in first:
        assert run_request.job_name == BACKFILL_JOB
        assert run_request.asset_selection == [dg.AssetKey(DAILY_REVENUE)]
        assert run_request.run_key == f"{request_id}/{run_request.partition_key}/1"
        tags = run_request.tags
        assert tags[T.REQUEST_ID] == request_id and tags[T.LANE] == T.LANE_BACKFILL
        assert tags[T.REPROCESS] == "completed" and tags[T.REQUESTED_BY] == "sensor-test"
        assert tags[T.CODE_VERSION] == "test-code-1" and int(tags[T.DAGSTER_PRIORITY]) == T.PRIORITY_BACKFILL
    assert {c.partition_key: c.decision for c in Ledger(env.catalog).cells(request_id)} == {
        DAYS[0]: "submitted", DAYS[1]: "submitted", DAYS[2]: "pending",
    }
    # No run was launched from those requests here. The next evaluation, at once, asks for nothing: the driver
    # that recorded them may still be creating their runs (a second daemon asking again would make a second run
    # of each key). Once a daemon started after they were recorded (a restart), it asks for the same keys.
    assert _evaluate(env) == []
    DaemonLease(env.catalog).acquire(LeaseHolder.this_process(str(env.home)), lease_seconds=30)
    assert [r.run_key for r in _evaluate(env)] == [r.run_key for r in first]
