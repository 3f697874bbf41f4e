"""The CLI prints the records the service returns: `versions`, `read`, `request show --cell` and the run queue's
limits are the service's, field for field (one serialization, whichever door asks)."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.service_wiring import backfills_for_home
from tests.instance_env import environment
from tests.orders import DEFS, GRAPH, run_partitions

DAY = "2022-09-01"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]

pytestmark = pytest.mark.xdist_group("integration/test_door_records")


def _cli_json(*args: str):
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _as_printed(data):
    """A record's ``as_dict`` as the CLI's ``--json`` prints it (times and other values as strings)."""
    return json.loads(json.dumps(data, default=str, sort_keys=True))


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """One day of the pipeline and its alert published (read-only for the tests below)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        with environment(tmp_path_factory.mktemp("records") / "dagster_home", monkeypatch) as env:
            approved = {T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "cfo"}
            assert run_partitions(env.instance, [DAY], assets=[*PIPELINE, REVENUE_ALERT], tags=approved)[0].success
            run_partitions(env.instance, [DAY], assets=PIPELINE)  # a second version: a run note, a superseded one
            yield env, backfills_for_instance(DEFS, env.instance, env.catalog)


def test_versions_json_is_each_entry_of_the_services_cell_versions(published):
    env, backfills = published
    view = backfills.cell_versions(DAILY_REVENUE, DAY)
    assert [e.version for e in view.versions] == backfills.versions(DAILY_REVENUE, DAY)
    assert _cli_json("versions", DAILY_REVENUE, DAY) == _as_printed([e.as_dict() for e in view.versions])
    assert [e.current for e in view.versions] == [False, True]
    assert view.versions[1].run_note == "a new run, computed as the one before"
    assert view.interval[0] == "2022-09-01T00:00:00+08:00" and view.skip_mark is None


def test_a_side_effect_assets_versions_are_the_services_deliveries(published):
    env, backfills = published
    view = backfills.cell_versions(REVENUE_ALERT, DAY)
    assert view.side_effect and view.versions == () and view.deliveries == tuple(backfills.deliveries(REVENUE_ALERT,
                                                                                                       DAY))
    assert _cli_json("versions", REVENUE_ALERT, DAY) == _as_printed([d.as_dict() for d in view.deliveries])


def test_read_json_is_the_services_read_record_and_both_are_recorded(published):
    env, backfills = published
    printed = _cli_json("read", DAILY_REVENUE, DAY, "--reader", "door-contract")
    done = backfills.read(DAILY_REVENUE, DAY, reader="door-contract")
    assert printed == _as_printed(done.as_dict())
    assert set(printed) == {"version_id", "asset", "partition_key", "sha256", "rows", "records"}
    readers = [c.consumer for c in env.catalog.consumers_of(done.version.version_id)]
    assert readers.count("external:door-contract") == 2


def test_served_verifies_what_the_pointers_serve_and_records_no_read(published):
    env, backfills = published
    current = env.catalog.current(ORDER_FACTS, DAY)
    before = env.catalog.consumers_of(current.version_id)
    [day] = backfills.served(ORDER_FACTS, DAY, DAY)
    assert day.version == current and len(day.frame) == current.rows
    assert env.catalog.consumers_of(current.version_id) == before


def test_show_cell_json_is_the_services_cell_tries_with_in_request(published):
    env, backfills = published
    request_id = _cli_json("request", "create", "--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY,
                           "--reprocess", "completed")["request_id"]
    seen = backfills.cell_tries(request_id, DAILY_REVENUE, DAY)
    assert seen.in_request is True and len(seen.tries) == 2 and not any(t.this_request for t in seen.tries)
    assert _cli_json("request", "show", request_id, "--cell", f"{DAILY_REVENUE}/{DAY}") == _as_printed(seen.as_dict())
    outside = backfills.cell_tries(request_id, ORDER_FACTS, DAY)
    assert outside.in_request is False and len(outside.tries) == 2


def test_the_services_demo_queries_answer_from_the_catalog(published):
    env, backfills = published
    assert backfills.rollback_target(DAILY_REVENUE, DAY) == backfills.versions(DAILY_REVENUE, DAY)[0]
    assert backfills.request_versions("req-20220901-00000000") == []


QUEUE_BLOCKS = {
    # Dagster takes the limits from any of these places: the CLI states what Dagster reads, wherever they are.
    "concurrency.runs": "concurrency:\n  runs:\n    max_concurrent_runs: 4\n    tag_concurrency_limits:\n"
                        "      - {key: backfill/lane, value: backfill, limit: 3}\n",
    "run_queue": "run_queue:\n  max_concurrent_runs: 4\n  tag_concurrency_limits:\n"
                 "    - {key: backfill/lane, value: backfill, limit: 3}\n",
    "none": "telemetry:\n  enabled: false\n",
}


@pytest.mark.parametrize("block", sorted(QUEUE_BLOCKS))
def test_the_cli_and_the_service_state_the_run_queue_limits_dagster_reads(env, block):
    (env.home / "dagster.yaml").write_text(QUEUE_BLOCKS[block])
    spec = M.RequestSpec(assets=(DAILY_REVENUE,), partitions=(DAY,), max_active=7)
    cli_side = backfills_for_home(GRAPH, env.home, None, M.RequestSource.CLI, "ana").context.queue_limits()
    instance = dg.DagsterInstance.from_config(str(env.home))
    try:
        dagster_side = backfills_for_instance(DEFS, instance, env.catalog).context.queue_limits()
    finally:
        instance.dispose()
    assert (cli_side.max_concurrent_runs, cli_side.limits) == (dagster_side.max_concurrent_runs, dagster_side.limits)
    assert cli_side.source == f"{env.home}/dagster.yaml"
    dry = _cli_json("request", "create", "--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY, "--max-active", "7",
                    "--dry-run")
    assert dry["concurrency"]["effective"] == cli_side.concurrency(spec).effective
    assert dry["concurrency"]["effective"] == (3 if block != "none" else 7)
