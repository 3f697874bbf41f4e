"""Access and the audit trail under attack.

``access.forged_lane_tags``: each trial runs ``revenue_alert`` for a backfilled day with one set of launch tags a
person could type (none, a typed ``backfill/lane=production``, the production trigger's own sensor and run-key
tags, a forged request id with approval tags) and counts what was delivered: the sink's lines and the outbox rows.

``bad_input.trailing_control_in_names``: each trial puts one control character at the end or inside one name
field of one door and requires a one-line refusal naming the field, with every catalog table (the operations
trail included) unchanged.
"""

from __future__ import annotations

import json
import random

import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.production import PRODUCTION_RUN_KEY, PRODUCTION_SENSOR
from tests.name_doors import cli_name_doors, with_name
from tests.orders import DEFS, run_partitions

from . import mode

DAY = "2022-09-06"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
CONTROLS = ["\n", "\r", "\t", "\x0b", "\x0c", "\x1c", "\x85", "\x1b", "\x7f", "\u2028"]

FORGERIES = {
    "no tags": {T.LANE: ""},
    "typed production lane": {T.LANE: T.LANE_PRODUCTION},
    "production trigger's tags": {T.LANE: T.LANE_PRODUCTION, T.DAGSTER_SENSOR: PRODUCTION_SENSOR,
                                  RUN_KEY_TAG: PRODUCTION_RUN_KEY.format(DAY)},
    "forged request with approval": {T.REQUEST_ID: "req-20221101-0badf00d", T.LANE: T.LANE_BACKFILL,
                                     T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "cfo"},
    "backfill lane with an allow tag and no approver": {T.LANE: T.LANE_BACKFILL, T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT},
}


def _sink_lines(env) -> int:
    try:
        with open(env.settings.sink_path, encoding="utf-8") as fh:
            return sum(1 for line in fh if line.strip())
    except FileNotFoundError:
        return 0


@pytest.fixture(scope="module")
def access_env(module_envs):
    env = module_envs("access")
    env.activate()
    runs = run_partitions(env.instance, [DAY], assets=PIPELINE)
    assert all(r.success for r in runs), runs
    return env


@pytest.mark.timeout(mode.timeout(per_trial_seconds=10))
def test_forged_lane_tags_deliver_nothing_without_an_approver(access_env, trials):
    env = access_env
    kinds = list(FORGERIES)
    with trials("access.forged_lane_tags") as klass:
        for i in range(max(mode.TRIALS, len(kinds))):
            how = kinds[i % len(kinds)]
            with klass.trial(f"{i} ({how})"):
                env.activate()
                [run] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=FORGERIES[how])
                delivered = _sink_lines(env) + len(deliveries(env.catalog, DAY, asset=REVENUE_ALERT))
                klass.tally("delivered", delivered)
                assert delivered == 0, f"{how}: delivered without an approver"
                if how != "production trigger's tags":  # production's own run passes over an older day
                    assert not run.success and "side effect not authorized" in run.failure, run.failure


def _doors(request_id: str, version_id: str, handoff_id: str) -> list[tuple[list[str], str]]:
    return [*cli_name_doors(DAY, version_id, request_id, handoff_id), (["launchpad requested_by"], "requested_by")]


def _launchpad_request(env, name: str) -> str:
    config = {"assets": [DAILY_REVENUE], "from_day": DAY, "to_day": DAY, "dry_run": False, "requested_by": name}
    result = DEFS.resolve_job_def(REQUEST_JOB).execute_in_process(
        run_config={"ops": {REQUEST_OP: {"config": config}}}, instance=env.instance, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


@pytest.mark.timeout(mode.timeout(per_trial_seconds=10, fixed_seconds=60))
def test_a_control_character_in_any_name_commits_nothing_and_leaves_no_orphan_trail_row(access_env, trials):
    from datetime import timedelta

    from backfill_assets.engine.model.intervals import utc_now
    from backfill_assets.engine.store.handoffs import Handoffs

    env = access_env
    env.activate()
    env.close_open_requests()
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", "2022-09-07", "--to",
                              "2022-09-07", "--requested-by", "reliability")["request_id"]
    handoff_id = Handoffs(env.catalog).offer(request_id, DAILY_REVENUE, "team:finance", ["2022-09-07"], utc_now(),
                                             timedelta(days=7))
    version_id = env.catalog.current(DAILY_REVENUE, DAY).version_id
    doors = _doors(request_id, version_id, handoff_id)
    rng = random.Random(39)
    with trials("bad_input.trailing_control_in_names") as klass:
        for i in range(max(mode.TRIALS, len(doors))):
            args, field = doors[i % len(doors)]
            control = rng.choice(CONTROLS)
            name = rng.choice([f"ana{control}", f"a{control}na", f"{control}ana"])
            with klass.trial(f"{i} ({field} {json.dumps(name)})"):
                before = env.table_rows()
                if args == ["launchpad requested_by"]:
                    message = _launchpad_request(env, name)
                    assert field in message and "\n" not in message.strip(), message
                else:
                    result = env.cli(*with_name(args, name))
                    lines = [line for line in result.output.splitlines() if line.strip()]
                    assert result.exit_code == 2 and len(lines) == 1 and field in lines[0], result.output
                assert env.table_rows() == before, "a refused name changed the catalog"
