"""``backfill-assets clear``: Airflow's clear (upstream/downstream, past/future, only failed) as a frozen request.

Through the CLI against a real instance; the request it creates is driven by the real driver logic.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.cli.test_request_cli import request_tables
from tests.driver_harness import drive
from tests.orders import CALENDAR, run_partitions

PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]


def invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def plan_of(*args: str) -> dict[tuple[str, str], str]:
    out = json.loads(invoke("clear", *args, "--json").output)
    assert out["dry_run"] is True
    return {(c["asset"], c["partition_key"]): f"{c['action']}: {c['reason']}" for c in out["cells"]}


def test_clear_is_a_dry_run_by_default_showing_every_cell_and_why_and_writes_nothing(env):
    run_partitions(env.instance, ["2022-09-01"], assets=PIPELINE)
    before = request_tables(env)
    plan = plan_of("--select", f"+{DAILY_REVENUE}", "--partition", "2022-09-03", "--past")
    # +daily_revenue: the asset and its parent, every day from the partitions' first day to the one named.
    days = ("2022-09-01", "2022-09-02", "2022-09-03")
    assert set(plan) == {(a, d) for a in (ORDER_FACTS, DAILY_REVENUE) for d in days}
    assert plan[(DAILY_REVENUE, "2022-09-01")] == "create: reprocess=completed"  # published, cleared all the same
    assert plan[(DAILY_REVENUE, "2022-09-02")] == "create: no version yet"
    text = invoke("clear", "--select", f"+{DAILY_REVENUE}", "--partition", "2022-09-03", "--past").output
    assert f"→ {ORDER_FACTS}, {DAILY_REVENUE}; 2022-09-01..2022-09-03" in text
    assert "dry run: nothing was written; run again with --yes" in text
    assert request_tables(env) == before


def test_downstream_selection_reaches_children_and_leaves_unauthorized_side_effects_out(env):
    plan = plan_of("--select", f"{DAILY_REVENUE}*", "--partition", "2022-09-02")
    assert plan == {
        (DAILY_REVENUE, "2022-09-02"): "create: no version yet",
        ("revenue_alert", "2022-09-02"): "skip: side effect not authorized",
    }


def test_future_reaches_the_newest_complete_interval(env):
    out = json.loads(invoke("clear", "--select", f"key:{RAW_ORDERS}", "--partition", "2022-09-03", "--future",
                            "--json").output)
    assert (out["first"], out["last"]) == ("2022-09-03", CALENDAR.newest_complete_key(utc_now()))
    assert len(out["cells"]) == len(CALENDAR.keys_between(out["first"], out["last"]))


def test_clear_yes_creates_a_request_that_reruns_published_cells(env):
    run_partitions(env.instance, ["2022-09-01", "2022-09-02"], assets=PIPELINE)
    old = {d: env.catalog.current(DAILY_REVENUE, d).version_id for d in ("2022-09-01", "2022-09-02")}
    created = json.loads(invoke("clear", "--select", DAILY_REVENUE, "--from", "2022-09-01", "--to", "2022-09-02",
                                "--reason", "FX table fixed", "--yes", "--json").output)
    assert created["reprocess"] == "completed" and created["only_failed"] is False
    assert created["selected_assets"] == [DAILY_REVENUE] and created["reason"] == "FX table fixed"
    drive(env, created["request_id"])
    shown = json.loads(invoke("request", "show", created["request_id"], "--json").output)
    assert shown["status"] == "completed" and shown["counts"]["published"] == 2
    for day, version_id in old.items():
        assert env.catalog.current(DAILY_REVENUE, day).version_id != version_id  # re-run and republished


def test_only_failed_reruns_the_rejected_cell_and_leaves_published_and_never_run_cells(env):
    defect = json.dumps({DAILY_REVENUE: {"defect_days": {"2022-09-02": "drop_rows"}}})
    first = json.loads(invoke("request", "create", "--assets", ",".join(PIPELINE), "--from", "2022-09-01", "--to",
                              "2022-09-03", "--conf", defect, "--json").output)
    drive(env, first["request_id"])
    assert env.catalog.versions_of(DAILY_REVENUE, "2022-09-02")[-1].state == "REJECTED"
    args = ("--select", DAILY_REVENUE, "--from", "2022-09-01", "--to", "2022-09-04", "--only-failed")
    plan = plan_of(*args)
    assert plan == {
        (DAILY_REVENUE, "2022-09-01"): "skip: latest attempt PUBLISHED",
        (DAILY_REVENUE, "2022-09-02"): "create: latest attempt REJECTED",
        (DAILY_REVENUE, "2022-09-03"): "skip: latest attempt PUBLISHED",
        (DAILY_REVENUE, "2022-09-04"): "skip: no failed attempt (--only-failed)",
    }
    created = json.loads(invoke("clear", *args, "--yes", "--json").output)
    assert created["reprocess"] == "failed" and created["only_failed"] is True
    drive(env, created["request_id"])
    shown = json.loads(invoke("request", "show", created["request_id"], "--json").output)
    assert shown["counts"]["published"] == 1 and shown["counts"]["skipped"] == 3
    assert env.catalog.current(DAILY_REVENUE, "2022-09-02") is not None
    assert "(only failed)" in invoke("request", "show", created["request_id"]).output


def test_clear_with_parents_over_a_depends_on_past_asset_in_backward_order_is_refused(env):
    before = request_tables(env)
    result = CliRunner().invoke(cli, ["clear", "--select", f"+{CUSTOMER_SNAPSHOT}", "--partition", "2022-09-03",
                                      "--past", "--order", "backward", "--yes"])
    assert result.exit_code == 2 and result.output.strip().startswith("error: --order backward is refused")
    assert CUSTOMER_SNAPSHOT in result.output and request_tables(env) == before


BAD_CLEARS = [
    pytest.param(["--select", "+++", "--partition", "2022-09-02"], "not a selection Dagster understands", id="syntax"),
    pytest.param(["--select", "nope", "--partition", "2022-09-02"], "not a selection Dagster understands",
                 id="unknown-asset"),
    pytest.param(["--select", "key:nope", "--partition", "2022-09-02"], "selects no asset", id="selects-nothing"),
    pytest.param(["--select", " ", "--partition", "2022-09-02"], "--select is empty", id="empty"),
    pytest.param(["--select", "../../etc/passwd", "--partition", "2022-09-02"], "--select", id="hostile-select"),
    pytest.param(["--select", "x" * 2000, "--partition", "2022-09-02"], "longer than", id="huge-select"),
    pytest.param(["--select", DAILY_REVENUE, "--partition", "2022-09-02", "--from", "2022-09-01"], "not both",
                 id="partition-and-range"),
    pytest.param(["--select", DAILY_REVENUE, "--past"], "give --partition", id="past-without-partition"),
    pytest.param(["--select", DAILY_REVENUE], "name the days", id="no-days"),
    pytest.param(["--select", DAILY_REVENUE, "--from", "2022-09-01"], "name the days", id="from-without-to"),
    pytest.param(["--select", DAILY_REVENUE, "--partition", "2022/09/02"], "YYYY-MM-DD", id="malformed-day"),
    pytest.param(["--select", DAILY_REVENUE, "--partition", "../2022-09-02"], "YYYY-MM-DD", id="hostile-day"),
    pytest.param(["--select", DAILY_REVENUE, "--partition", "2022-08-31", "--future"], "before the first partition",
                 id="before-first-day"),
    pytest.param(["--select", DAILY_REVENUE, "--partition", "9999-12-30"], "past the newest complete", id="future"),
    pytest.param(["--select", DAILY_REVENUE, "--from", "2022-09-03", "--to", "2022-09-01"], "is before --from",
                 id="to-before-from"),
    pytest.param(["--select", DAILY_REVENUE, "--partition", "2022-09-02", "--max-active", "0"], "--max-active",
                 id="max-active-0"),
]


@pytest.mark.parametrize("confirmed", [False, True], ids=["dry-run", "yes"])
@pytest.mark.parametrize("args, message", BAD_CLEARS)
def test_a_bad_clear_is_one_line_exit_2_and_writes_nothing(refusal_env, args, message, confirmed):
    env = refusal_env
    before = request_tables(env)
    result = CliRunner().invoke(cli, ["clear", *args, *(["--yes"] if confirmed else [])])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert request_tables(env) == before
