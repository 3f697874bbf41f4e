"""The two halves every "damaged after publish" trial shares: publish a day again through a real request (so the
damaged version is the one readers resolve), and check that a downstream run refuses the damage."""

from __future__ import annotations

import json

from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS
from backfill_assets.integration.runs.local_runs import LocalRun
from tests.driver_harness import drive
from tests.orders import run_partitions

from .envs import RelEnv
from .invariants import materialized_versions


def publish_again(env: RelEnv, trial: int, days: list[str]) -> tuple[str, str, Version]:
    """A request re-publishes ``order_facts`` for one of ``days`` (by trial): (request id, day, its new version)."""
    env.activate()
    env.close_open_requests()
    day = days[trial % len(days)]
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", day, "--to", day,
                              "--reprocess", "completed", "--requested-by", "reliability")["request_id"]
    drive(env, request_id)
    version = env.catalog.current(ORDER_FACTS, day)
    assert version is not None and version.request_id == request_id, version
    return request_id, day, version


def assert_reported_as_gap(env: RelEnv, request_id: str, version: Version, gap: str) -> None:
    """``reconcile --verify-files`` exits 1 with exactly one gap, this version's, saying ``gap``."""
    result = env.cli("reconcile", request_id, "--verify-files", "--json")
    assert result.exit_code == 1, result.output
    gaps = json.loads(result.stdout)["gaps"]
    assert [g["version_id"] for g in gaps] == [version.version_id], gaps
    assert gap in gaps[0]["gap"], gaps[0]


def assert_downstream_refuses(env: RelEnv, day: str, needle: str) -> LocalRun:
    """A ``daily_revenue`` run of ``day`` fails naming ``needle`` and publishes and materializes nothing."""
    downstream_before = env.catalog.current(DAILY_REVENUE, day)
    events_before = materialized_versions(env.instance, DAILY_REVENUE, day)
    [run] = run_partitions(env.instance, [day], assets=[DAILY_REVENUE])
    assert not run.success and needle in (run.failure or ""), run.failure
    assert env.catalog.current(DAILY_REVENUE, day).version_id == downstream_before.version_id
    assert materialized_versions(env.instance, DAILY_REVENUE, day) == events_before
    return run
