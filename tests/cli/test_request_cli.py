"""``request create`` refuses bad input with one line on stderr, exit 2, and no ledger row written."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import sqlalchemy as sa
import yaml
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store import schema
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, REVENUE_ALERT
from backfill_assets.integration import instance_template
from tests.orders import CALENDAR as calendar

FIRST, LAST = "2022-09-01", "2022-09-02"
# Days relative to the business day when the test runs, not when it was collected: a suite collected before
# midnight in the business time zone runs these cases after it (today would then be a complete interval).
TODAY, TOMORROW = "<today>", "<tomorrow>"


def business_days_from_now(args: list[str]) -> list[str]:
    today = utc_now().astimezone(calendar.tz).date()
    days = {TODAY: today.isoformat(), TOMORROW: (today + timedelta(days=1)).isoformat()}
    return [days.get(arg, arg) for arg in args]

DEEP = '{"handoff_window_seconds": ' + '{"a": ' * 12 + "1" + "}" * 12 + "}"
VERY_DEEP = "[" * 100_000 + "]" * 100_000


def create_args(**overrides: str | None) -> list[str]:
    options = {"--assets": DAILY_REVENUE, "--from": FIRST, "--to": LAST, **overrides}
    args = ["request", "create"]
    for flag, value in options.items():
        if value is not None:
            args += [flag, value]
    return args


BAD_INPUT = [
    pytest.param(
        create_args(**{"--from": "2022-09-05", "--to": "2022-09-01"}), "is before --from", id="to-before-from"
    ),
    pytest.param(create_args(**{"--assets": "no_such_asset"}), "unknown asset", id="unknown-asset"),
    pytest.param(create_args(**{"--assets": f"{DAILY_REVENUE},{DAILY_REVENUE}"}), "twice", id="asset-twice"),
    pytest.param(create_args(**{"--assets": " , "}), "--assets is empty", id="empty-assets"),
    pytest.param(create_args(**{"--from": "2022/09/01"}), "YYYY-MM-DD", id="malformed-date"),
    pytest.param(create_args(**{"--to": "2022-9-2"}), "YYYY-MM-DD", id="unpadded-date"),
    pytest.param(create_args(**{"--from": "2022-02-30"}), "not a valid calendar date", id="feb-30"),
    pytest.param(create_args(**{"--to": "2022-09-31"}), "not a valid calendar date", id="sep-31"),
    pytest.param(create_args(**{"--from": "2022-09-01T00:00:00+08:00"}), "YYYY-MM-DD", id="date-with-timezone"),
    pytest.param(create_args(**{"--from": "2022-08-31"}), "before the first partition", id="before-first-partition"),
    pytest.param(create_args(**{"--to": TODAY}), "past the newest complete interval", id="today-in-progress"),
    pytest.param(create_args(**{"--to": TOMORROW}), "past the newest complete interval", id="tomorrow"),
    pytest.param(create_args(**{"--to": "9999-12-31"}), "past the newest complete interval", id="far-future"),
    pytest.param(create_args(**{"--conf": "{not json"}), "not valid JSON", id="conf-not-json"),
    pytest.param(create_args(**{"--conf": "[1]"}), "must be a JSON object", id="conf-array"),
    pytest.param(create_args(**{"--conf": '{"x": 1}'}), "unknown key", id="conf-unknown-key"),
    pytest.param(create_args(**{"--conf": DEEP}), "nested deeper", id="conf-deeply-nested"),
    pytest.param(create_args(**{"--conf": VERY_DEEP}), "--conf", id="conf-recursion-bomb"),
    pytest.param(
        create_args(**{"--conf": json.dumps({ORDER_FACTS: {"defect_days": {FIRST: "drop_rows"}}})}),
        "which this request does not run",
        id="conf-asset-not-selected",
    ),
    pytest.param(
        create_args(**{"--conf": json.dumps({DAILY_REVENUE: {"defect_days": {FIRST: "explode"}}})}),
        "explode",
        id="conf-unknown-defect",
    ),
    pytest.param(create_args(**{"--reprocess": "sometimes"}), "--reprocess", id="unknown-reprocess-policy"),
    pytest.param(create_args(**{"--order": "sideways"}), "--order", id="unknown-order"),
    pytest.param(create_args(**{"--downstream": "everything"}), "--downstream", id="unknown-downstream"),
    pytest.param(create_args(**{"--max-active": "0"}), "--max-active", id="max-active-0"),
    pytest.param(create_args(**{"--max-active": "65"}), "--max-active", id="max-active-65"),
    pytest.param(create_args(**{"--partitions-per-run": "0"}), "--partitions-per-run", id="per-run-0"),
    pytest.param(create_args(**{"--partitions-per-run": "-1"}), "--partitions-per-run", id="per-run-negative"),
    pytest.param(create_args(**{"--partitions-per-run": "abc"}), "must be auto or an integer from 1 to 366",
                 id="per-run-not-a-number"),
    pytest.param(create_args(**{"--partitions-per-run": "367"}), "--partitions-per-run", id="per-run-over-max"),
    pytest.param(
        create_args(**{"--assets": f"{ORDER_FACTS},{CUSTOMER_SNAPSHOT}", "--order": "backward"}),
        "depends on the past",
        id="backward-with-depends-on-past",
    ),
    pytest.param(
        create_args(**{"--assets": f"{ORDER_FACTS},{CUSTOMER_SNAPSHOT}", "--max-active": "4"}),
        f"--max-active 4 is refused: {CUSTOMER_SNAPSHOT} depends on the past, so its days run one at a time",
        id="parallel-with-a-serial-asset",
    ),
    pytest.param(
        create_args(**{"--assets": f"{DAILY_REVENUE},{REVENUE_ALERT}", "--allow-side-effects": REVENUE_ALERT}),
        "--approved-by",
        id="side-effects-without-approver",
    ),
    pytest.param(
        create_args(**{"--allow-side-effects": DAILY_REVENUE, "--approved-by": "cfo"}),
        "not a side-effecting asset",
        id="allow-side-effects-on-a-data-asset",
    ),
    pytest.param(
        create_args(**{"--requested-by": "x\nerror: injected"}), "--requested-by", id="requested-by-with-newline"
    ),
]


def request_tables(env) -> dict[str, list[tuple]]:
    with env.catalog.engine.connect() as conn:
        return {
            t.name: sorted(tuple(r) for r in conn.execute(sa.select(t)).all())
            for t in (schema.requests, schema.request_items, schema.claims)
        }


@pytest.fixture
def existing_request(env):
    """A valid request already in the ledger, so 'unchanged' means more than 'still empty'."""
    result = CliRunner().invoke(
        cli, create_args(**{"--from": "2022-09-04", "--to": "2022-09-05"}) + ["--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["request_id"]


def assert_refused_without_writing(env, args: list[str], message: str) -> None:
    before = request_tables(env)
    assert len(before["requests"]) == 1
    result = CliRunner().invoke(cli, business_days_from_now(args))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert message in lines[0], lines[0]
    assert request_tables(env) == before


@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_request_is_one_line_error_exit_2_and_writes_no_ledger_row(env, existing_request, args, message):
    assert_refused_without_writing(env, args, message)


DRY_RUN_CASES = (
    "to-before-from", "feb-30", "tomorrow", "conf-not-json", "max-active-0", "side-effects-without-approver",
    "per-run-not-a-number", "per-run-over-max",
)


@pytest.mark.parametrize("args, message", [p for p in BAD_INPUT if p.id in DRY_RUN_CASES])
def test_bad_dry_run_is_the_same_one_line_error(env, existing_request, args, message):
    assert_refused_without_writing(env, [*args, "--dry-run"], message)


def test_valid_request_is_written_with_its_cells_and_claims(env, existing_request):
    """The control case for the test above: the same command with good input does write."""
    before = request_tables(env)
    result = CliRunner().invoke(cli, create_args() + ["--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    after = request_tables(env)
    assert len(after["requests"]) == len(before["requests"]) + 1
    assert len(after["request_items"]) == len(before["request_items"]) + 2
    assert len(after["claims"]) == len(before["claims"]) + 2


def test_reprocess_none_skips_a_cell_whose_run_failed_without_a_version_and_failed_reruns_it(env):
    from backfill_assets.examples.orders.domain import RAW_ORDERS
    from tests.orders import run_partitions

    assert run_partitions(env.instance, [FIRST, LAST], assets=[RAW_ORDERS])[0].success
    # A run that fails before writing anything: its config is refused inside the step (no version begun).
    bogus = {FIRST: {"ops": {ORDER_FACTS: {"config": {"defect_days": {FIRST: "bogus"}}}}}}
    [failed] = run_partitions(env.instance, [FIRST], assets=[ORDER_FACTS], run_config_for=bogus)
    assert not failed.success and env.catalog.versions_of(ORDER_FACTS, FIRST) == []

    def dry_run(reprocess: str) -> dict[str, str]:
        args = create_args(**{"--assets": ORDER_FACTS, "--reprocess": reprocess}) + ["--dry-run", "--json"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return {c["partition_key"]: f"{c['action']}: {c['reason']}" for c in json.loads(result.output)["cells"]}

    none = dry_run("none")
    assert none[FIRST].startswith("skip: has a run") and none[LAST] == "create: no run yet"
    assert dry_run("failed")[FIRST] == "create: latest run failed before writing a version"


def test_order_and_max_active_left_out_are_what_the_assets_declare(env):
    serial = json.loads(CliRunner().invoke(cli, create_args(**{"--assets": f"{ORDER_FACTS},{CUSTOMER_SNAPSHOT}"})
                                           + ["--dry-run", "--json"], catch_exceptions=False).output)
    assert (serial["max_active"], serial["order"]) == (1, "forward")
    free = json.loads(CliRunner().invoke(cli, create_args() + ["--dry-run", "--json"], catch_exceptions=False).output)
    assert (free["max_active"], free["order"]) == (2, "forward")


def test_create_and_dry_run_state_the_concurrency_the_instance_really_allows(env):
    (env.home / "dagster.yaml").write_text(
        "concurrency:\n  runs:\n    max_concurrent_runs: 3\n    tag_concurrency_limits:\n"
        "      - {key: backfill/lane, value: backfill, limit: 2}\n"
    )
    dry = json.loads(CliRunner().invoke(cli, create_args(**{"--max-active": "6"}) + ["--dry-run", "--json"]).output)
    assert dry["effective_concurrency"] == 2 and "backfill/lane=backfill: 2" in dry["concurrency_note"]
    human = CliRunner().invoke(cli, create_args(**{"--max-active": "6"}), catch_exceptions=False).output
    assert "max_active 6, but at most 2 run(s) of this request execute at once" in human
    created = json.loads(CliRunner().invoke(cli, create_args(**{"--from": "2022-09-03", "--to": "2022-09-03",
                                                                "--max-active": "1"}) + ["--json"]).output)
    assert created["effective_concurrency"] == 1 and created["concurrency_note"] is None


def test_max_active_3_on_the_shipped_instance_names_the_limit_that_binds_at_create_dry_run_and_show(env):
    shipped = yaml.safe_load(instance_template.template_text())
    (env.home / "dagster.yaml").write_text(yaml.safe_dump(shipped))
    three = {"--max-active": "3"}
    team = "tag limit backfill/team: 2 per distinct value (per team, shared by the team's every backfill)"
    dry = json.loads(CliRunner().invoke(cli, create_args(**three) + ["--dry-run", "--json"]).output)
    assert (dry["concurrency"]["effective"], dry["concurrency"]["bound_by"]) == (2, [team])
    assert dry["concurrency"]["raise_in"].startswith("concurrency.runs.tag_concurrency_limits in ")
    assert dry["concurrency"]["raise_in"].endswith("dagster.yaml")
    human = CliRunner().invoke(cli, create_args(**three), catch_exceptions=False).output
    assert f"at most 2 run(s) of this request execute at once: bound by {team}; to run more at once, raise it " \
           "under concurrency.runs.tag_concurrency_limits in " in human
    request_id = human.split()[1]
    shown = json.loads(CliRunner().invoke(cli, ["request", "show", request_id, "--json"]).output)
    assert shown["concurrency"] == dry["concurrency"]
    shown_text = CliRunner().invoke(cli, ["request", "show", request_id], catch_exceptions=False).output
    assert f"\n  max_active 3, but at most 2 run(s) of this request execute at once: bound by {team}" in shown_text

    # The team's limit raised to the lane's: nothing else holds the request below its max_active.
    for limit in shipped["concurrency"]["runs"]["tag_concurrency_limits"]:
        limit["limit"] = 3 if limit["key"] == "backfill/team" else limit["limit"]
    (env.home / "dagster.yaml").write_text(yaml.safe_dump(shipped))
    created = json.loads(CliRunner().invoke(cli, create_args(**three, **{"--from": "2022-09-03", "--to": "2022-09-04"})
                                            + ["--json"]).output)
    assert created["concurrency"] == {"max_active": 3, "effective": 3, "bound_by": [], "raise_in": None,
                                      "note": None}


def test_wait_exits_3_when_the_request_is_still_open_at_the_timeout(env):
    created = CliRunner().invoke(cli, create_args() + ["--json"], catch_exceptions=False)
    request_id = json.loads(created.output)["request_id"]
    # No daemon runs here, so nothing is submitted: the request stays open past the timeout.
    waited = CliRunner().invoke(cli, ["request", "wait", request_id, "--timeout", "0.5", "--json"])
    assert waited.exit_code == 3, waited.output
    out = json.loads(waited.output)
    assert out["timed_out"] is True and out["complete"] is False and out["counts"]["pending"] == 2


def test_the_dry_run_shows_k_why_and_the_planned_runs_in_text_and_json(env):
    twenty = {"--assets": f"{ORDER_FACTS},{DAILY_REVENUE}", "--from": "2022-09-01", "--to": "2022-09-20",
              "--max-active": "2"}
    text = CliRunner().invoke(cli, create_args(**twenty) + ["--dry-run"], catch_exceptions=False).output
    assert "partitions per run: 10 (auto: 20 intervals over 2 run slot(s), up to 10 per run)" in text
    assert "2 run(s): 2022-09-01..2022-09-10, 2022-09-11..2022-09-20" in text
    dry = json.loads(CliRunner().invoke(cli, create_args(**twenty) + ["--dry-run", "--json"]).output)
    assert (dry["partitions_per_run"], dry["partitions_per_run_mode"]) == (
        10, "auto: 20 intervals over 2 run slot(s), up to 10 per run")
    assert dry["runs"] == [
        {"first": "2022-09-01", "last": "2022-09-10", "intervals": 10, "assets": [ORDER_FACTS, DAILY_REVENUE]},
        {"first": "2022-09-11", "last": "2022-09-20", "intervals": 10, "assets": [ORDER_FACTS, DAILY_REVENUE]},
    ]
    one = json.loads(CliRunner().invoke(
        cli, create_args(**twenty, **{"--partitions-per-run": "1"}) + ["--dry-run", "--json"]).output)
    assert (one["partitions_per_run"], one["partitions_per_run_mode"], len(one["runs"])) == (1, "explicit", 20)
    text = CliRunner().invoke(cli, create_args(**twenty, **{"--partitions-per-run": "1"}) + ["--dry-run"]).output
    assert "partitions per run: 1 (explicit)" in text
    assert "20 run(s): 2022-09-01, 2022-09-02, " in text and "… and 12 more" in text
    assert request_tables(env)["requests"] == []


def test_create_freezes_the_resolved_k_and_show_says_it_was_auto(env):
    args = create_args(**{"--from": "2022-09-01", "--to": "2022-09-14", "--max-active": "2"})
    created = json.loads(CliRunner().invoke(cli, args + ["--json"], catch_exceptions=False).output)
    assert (created["partitions_per_run"], created["partitions_per_run_mode"]) == (
        7, "auto: 14 intervals over 2 run slot(s), up to 7 per run")
    shown = CliRunner().invoke(cli, ["request", "show", created["request_id"]], catch_exceptions=False).output
    assert "partitions_per_run=7 (auto: 14 intervals over 2 run slot(s), up to 7 per run)" in shown
    small = json.loads(CliRunner().invoke(cli, create_args(**{"--from": "2022-09-15", "--to": "2022-09-20"})
                                          + ["--json"], catch_exceptions=False).output)
    assert small["partitions_per_run"] == 1 and "at most 3 per slot" in small["partitions_per_run_mode"]
