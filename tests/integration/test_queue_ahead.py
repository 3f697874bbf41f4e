"""Queue-ahead: when the instance runs one run per `backfill/slot` value, the driver queues a run behind each
running one; without that limit it never has more than max_active runs in flight."""

from __future__ import annotations

import json
from collections import Counter

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.integration.runs.dagster_adapter import enforces_one_run_per_tag_value
from backfill_assets.integration.sensors.driver import drive_request, run_request_for
from tests.homes import shipped_storage
from tests.instance_env import Env
from tests.orders import GRAPH

SLOT_LIMIT = {"key": T.SLOT, "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
DAYS = ("2022-09-01", "2022-09-05")


def _queued_instance(env: Env, limits: list[dict]):
    return dg.instance_for_test(
        temp_dir=str(env.home),
        overrides={
            **shipped_storage(),
            "run_coordinator": {
                "module": "dagster.core.run_coordinator",
                "class": "QueuedRunCoordinator",
                "config": {"tag_concurrency_limits": limits},
            }
        },
    )


def _first_tick(env: Env, instance: dg.DagsterInstance, max_active: int):
    result = CliRunner().invoke(cli, ["request", "create", "--assets", RAW_ORDERS, "--from", DAYS[0], "--to", DAYS[1],
                                      "--max-active", str(max_active), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    record = Ledger(env.catalog).get(json.loads(result.output)["request_id"])
    return record, drive_request(GRAPH, instance, env.catalog, record, code_version())


def test_with_one_run_per_slot_the_driver_queues_one_run_behind_each_running_one(env):
    with _queued_instance(env, [SLOT_LIMIT]) as instance:
        assert enforces_one_run_per_tag_value(instance, T.SLOT)
        record, submissions = _first_tick(env, instance, max_active=2)
    assert [s.partition for s in submissions] == ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"]
    assert Counter(s.slot for s in submissions) == {0: 2, 1: 2}
    tags = [run_request_for(GRAPH, record, s).tags[T.SLOT] for s in submissions]
    assert tags == [f"{record.request_id}/{n}" for n in (0, 1, 0, 1)]


@pytest.mark.parametrize(
    "limits",
    [[], [{**SLOT_LIMIT, "limit": 2}], [{"key": T.SLOT, "limit": 1}]],
    ids=["no limit", "two per slot", "not per value"],
)
def test_without_a_one_run_per_slot_limit_the_driver_submits_only_max_active(env, limits):
    with _queued_instance(env, limits) as instance:
        assert not enforces_one_run_per_tag_value(instance, T.SLOT)
        record, submissions = _first_tick(env, instance, max_active=2)
    assert [s.partition for s in submissions] == ["2022-09-01", "2022-09-02"]
    assert all(s.slot is None for s in submissions)
    assert all(T.SLOT not in run_request_for(GRAPH, record, s).tags for s in submissions)


def test_the_project_instance_configures_the_slot_limit(tmp_path, monkeypatch):
    from backfill_assets.engine.model.settings import PACKAGE_DIR

    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert enforces_one_run_per_tag_value(instance, T.SLOT)
