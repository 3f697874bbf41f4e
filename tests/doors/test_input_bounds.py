"""Input at its bounds, through the real doors (the CLI via click's CliRunner, the Launchpad's jobs, Dagster runs
and backfills on a real instance): non-finite numbers, numeric tags that are not plain numbers, over-long text,
huge values in errors, an unbounded seed, unknown statuses. Each is refused in one line naming the field, and
nothing changes; a number that reaches a frame anyway fails its audit and the previous version keeps serving."""

from __future__ import annotations

import json
import subprocess

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.examples.orders.source import SourceSystem, orders
from backfill_assets.integration.jobs import PRODUCTION_JOB
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.runs.dagster_adapter import list_backfills
from backfill_assets.integration.sensors.adoption import adopt_and_track
from backfill_assets.service import RequestInput
from tests.orders import DEFS, GRAPH, run_partitions
from tests.orders import MODULE as CODE_LOCATION_MODULE

DAY = "2022-09-01"
NON_FINITE = ["Infinity", "-Infinity", "NaN", "1e999"]
MEGABYTE = "x" * 1_000_000


def cli_refusal(*args: str) -> str:
    """The one stderr line of a refused command (exit 2, nothing on stdout)."""
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 2 and result.stdout == "", result.output[:500]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[:500]
    return lines[0]


def launchpad_refusal(env, **config) -> str:
    job = DEFS.resolve_job_def(REQUEST_JOB)
    result = job.execute_in_process(
        run_config={"ops": {REQUEST_OP: {"config": {"assets": [ORDER_FACTS], "from_day": DAY, "to_day": DAY,
                                                    **config}}}},
        instance=env.instance, raise_on_error=False,
    )
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


@pytest.mark.parametrize("number", NON_FINITE)
def test_a_non_finite_conf_number_is_refused_by_the_cli_the_launchpad_and_python_naming_the_field(
    refusal_env, number
):
    conf = f'{{"{ORDER_FACTS}": {{"usd_to_cny": {number}}}}}'
    line = cli_refusal("request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--conf", conf)
    assert line.startswith(f"error: --conf {ORDER_FACTS}.usd_to_cny: ") and "not a finite number" in line, line
    message = launchpad_refusal(refusal_env, conf=conf)
    assert message.startswith(f"conf {ORDER_FACTS}.usd_to_cny: ") and "not a finite number" in message, message
    with pytest.raises(InvalidInput, match="not a finite number"):
        backfills_for_instance(DEFS, refusal_env.instance, refusal_env.catalog).create(
            RequestInput(assets=[ORDER_FACTS], from_day=DAY, to_day=DAY,
                         conf={ORDER_FACTS: {"usd_to_cny": json.loads(number)}}))
    assert Ledger(refusal_env.catalog).list() == []


def test_an_asset_run_given_infinity_in_its_own_run_config_computes_nothing(env):
    """The Launchpad's YAML for an asset's own run takes `.inf`: the step refuses it before computing, unretried."""
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS]))
    config = {DAY: {"ops": {ORDER_FACTS: {"config": {"usd_to_cny": float("inf")}}}}}
    [run] = run_partitions(env.instance, [DAY], assets=[ORDER_FACTS], run_config_for=config)
    assert not run.success and "usd_to_cny: inf is not a finite number" in (run.failure or ""), run.failure
    assert env.catalog.versions_of(ORDER_FACTS, DAY) == []


def test_an_infinite_number_that_reaches_a_frame_fails_its_audit_and_the_previous_version_keeps_serving(env):
    """An infinite amount in the source: the source's own total is infinite too, so `got - want` is NaN, which
    the totals check used to call a pass — published with every blocking check green."""
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS]))
    serving = env.catalog.current(RAW_ORDERS, DAY)
    source = SourceSystem(env.settings.source_url)
    at = f"{DAY}T01:00:00+00:00"
    with source.engine.begin() as conn:
        conn.execute(sa.insert(orders).values(order_id="o-inf", updated_at=at, customer_id="c-00001",
                                              region="north", amount=float("inf"), currency="CNY", created_at=at))
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    assert not run.success
    [attempt] = [v for v in env.catalog.versions_of(RAW_ORDERS, DAY) if v.dagster_run_id == run.run_id]
    assert attempt.state == "REJECTED" and "business_totals" in (attempt.error or ""), attempt.error
    [totals] = [c for c in attempt.checks or [] if c["name"] == "business_totals"]
    assert totals["passed"] is False and "amount holds 1 infinite value(s)" in totals["description"], totals
    assert env.catalog.current(RAW_ORDERS, DAY).version_id == serving.version_id


def test_a_numeric_tag_that_is_not_a_plain_number_fails_the_step_naming_the_tag(env):
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS]))
    ui_backfill = {T.DAGSTER_BACKFILL: "uibackfl", T.LANE: ""}
    for value in ("²", "1" + "0" * 4400):
        [run] = run_partitions(env.instance, [DAY], assets=[ORDER_FACTS], tags={**ui_backfill, T.MAX_ACTIVE: value})
        assert not run.success and (run.failure or "").startswith(f"{ORDER_FACTS} {DAY}: tag {T.MAX_ACTIVE}="), (
            run.failure or "")[:300]
        assert len(run.failure) < 400 and "ValueError" not in run.failure
    assert env.catalog.versions_of(ORDER_FACTS, DAY) == []


def test_one_ui_backfill_with_a_bad_numeric_tag_never_blocks_the_adoption_of_the_others(env):
    """Two real `dagster job backfill`s, the first tagged `backfill/max_active=²`: both are adopted by the sensor's
    own function, the bad one with the refusal on its request (its steps compute nothing)."""
    for day, tags in ((DAY, {T.MAX_ACTIVE: "²"}), ("2022-09-02", {})):
        subprocess.run(
            [dagster_bin("dagster"), "job", "backfill", "-m", CODE_LOCATION_MODULE, "-j", PRODUCTION_JOB,
             "--partitions", day, "--tags", json.dumps({**tags, T.REPROCESS: "none"}), "--noprompt"],
            check=True, capture_output=True, timeout=120,
        )
    infos = list_backfills(env.instance, DEFS.get_repository_def())
    assert len(infos) == 2
    adopted, _, failed = adopt_and_track(GRAPH, env.instance, DEFS.get_repository_def(), env.catalog)
    assert failed == [] and len(adopted) == 2
    bad = next(i for i in infos if i.tags.get(T.MAX_ACTIVE))
    record = Ledger(env.catalog).get(f"dg-{bad.backfill_id}")
    assert f"tag {T.MAX_ACTIVE}='²' must be a whole number from 1 to 64" in (record.message or ""), record.message


def test_an_over_long_reason_is_refused_not_cut(refusal_env):
    line = cli_refusal("request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY,
                       "--reason", "r" * 2001)
    assert line == "error: --reason must be text of at most 2000 characters", line
    assert launchpad_refusal(refusal_env, reason="r" * 2001) == "reason must be text of at most 2000 characters"
    assert Ledger(refusal_env.catalog).list() == []


@pytest.mark.parametrize("args", [
    ["request", "create", "--assets", MEGABYTE, "--from", DAY, "--to", DAY],
    ["request", "create", "--assets", ORDER_FACTS, "--from", MEGABYTE, "--to", DAY],
    ["request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--requested-by", MEGABYTE],
    ["request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--max-active", MEGABYTE],
    ["request", "create", "--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--order", MEGABYTE],
    ["request", "show", MEGABYTE],
    ["versions", ORDER_FACTS, MEGABYTE],
    ["read", MEGABYTE, DAY],
    ["handoff", "list", "--status", MEGABYTE],
], ids=["assets", "from", "requested-by", "max-active", "order", "request-id", "partition", "asset", "status"])
def test_a_megabyte_value_gives_an_error_line_of_a_few_hundred_characters(refusal_env, args):
    line = cli_refusal(*args)
    assert len(line) < 400, (len(line), line[:400])


@pytest.mark.parametrize("config", [{"assets": [MEGABYTE]}, {"requested_by": MEGABYTE}, {"from_day": MEGABYTE},
                                    {"order": MEGABYTE}, {"approved_by": MEGABYTE}],
                         ids=["assets", "requested_by", "from_day", "order", "approved_by"])
def test_a_megabyte_launchpad_value_fails_the_run_with_a_bounded_message(refusal_env, config):
    message = launchpad_refusal(refusal_env, **config)
    assert len(message) < 400, (len(message), message[:400])
    assert Ledger(refusal_env.catalog).list() == []


@pytest.mark.parametrize("args, expected", [
    (["--from", DAY, "--to", "9999-12-30", "--per-day", "1"], "--to 9999-12-30 is past the newest complete"),
    (["--from", DAY, "--to", DAY, "--per-day", "1000000"], "--per-day 1000000 must be a whole number from 1 to"),
])
def test_seed_is_bounded_like_request_create_and_writes_nothing_when_refused(env, args, expected):
    source = SourceSystem(env.settings.source_url)
    with source.engine.connect() as conn:
        before = conn.execute(sa.select(sa.func.count()).select_from(orders)).scalar_one()
    line = cli_refusal("seed", *args)
    assert expected in line, line
    with source.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(orders)).scalar_one() == before


@pytest.mark.parametrize("args, expected", [
    (["--status", "bogus"], "error: --status 'bogus' is not one of open, accepted, declined, expired"),
    (["--status", "OPEN"], "error: --status 'OPEN' is not one of"),
    (["--request", "../x"], "error: request id '../x' is not of the form"),
])
def test_handoff_list_refuses_an_unknown_status_or_request_instead_of_listing_nothing(refusal_env, args, expected):
    assert cli_refusal("handoff", "list", *args).startswith(expected)
    for status in ("open", "accepted", "declined", "expired"):
        result = CliRunner().invoke(cli, ["handoff", "list", "--status", status, "--json"])
        assert result.exit_code == 0 and json.loads(result.stdout) == [], result.output


def test_dagster_can_still_run_the_example_after_all_of_this(env):
    """The bounds refuse only what they name: a plain run of the example still publishes."""
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS,
                                                                              DAILY_REVENUE]))
    assert isinstance(env.instance, dg.DagsterInstance)
