"""``request show ID --cell ASSET/PARTITION``: every try of one cell across all requests and production, this
request's marked (Airflow's task tries), agreeing with ``versions``; bad cell text is one line, exit 2."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_tags_for
from tests.driver_harness import drive
from tests.instance_env import environment
from tests.orders import GRAPH, run_chunk, run_partitions

# One worker builds the module's tries once (xdist would otherwise build them on each worker its tests went to).
pytestmark = pytest.mark.xdist_group("integration/test_cell_tries")

DAY = "2022-09-02"
FIRST_DAY = "2022-09-01"
CELL = f"{RAW_ORDERS}/{DAY}"


def _json(*args: str):
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _request(env, by: str, reason: str, *extra: str) -> str:
    rid = _json("request", "create", "--assets", RAW_ORDERS, "--from", DAY, "--to", DAY, "--reprocess", "completed",
                "--requested-by", by, "--reason", reason, *extra)["request_id"]
    drive(env, rid)
    return rid


@pytest.fixture(scope="module")
def tried(tmp_path_factory):
    """One environment for the module's read-only tests, with one cell tried four times (``tries``): building the
    tries is the module's cost, and no test below changes what it reads."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        with environment(tmp_path_factory.mktemp("tries") / "dagster_home", monkeypatch) as env:
            yield env, tries_of(env)


def refused_config(day: str) -> dict:
    """Run config whose defect the step refuses before writing anything."""
    return {"ops": {RAW_ORDERS: {"config": {"defect_days": {day: "bogus"}}}}}


def tries_of(env) -> dict[str, str]:
    """One cell tried nine times: a production run that published, one that failed before writing, a Dagster
    range run and a chunk run over the day that failed before writing, a request that published, one whose check
    failed, and one whose runs failed before writing anything (relaunched twice). A run of another asset on the
    day is no try of the cell."""
    [production] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    [failed_production] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS],
                                         run_config_for={DAY: refused_config(DAY)})
    [other_asset] = run_partitions(env.instance, [DAY], assets=[ORDER_FACTS])
    [ranged] = run_partitions(env.instance, [(FIRST_DAY, DAY)], assets=[RAW_ORDERS],
                              run_config_for={FIRST_DAY: refused_config(DAY)})
    chunked = run_chunk(env.instance, {RAW_ORDERS: [FIRST_DAY, DAY]},
                        configs={RAW_ORDERS: {"defect_days": {DAY: "bogus"}}})
    assert other_asset.success and not any(r.success for r in (failed_production, ranged, chunked))
    published = _request(env, "alice", "FX fix")
    defect = json.dumps({RAW_ORDERS: {"defect_days": {DAY: "drop_rows"}}})
    rejected = _request(env, "bob", "check the checks", "--conf", defect)
    # Runs of a request that fail before writing (their config is refused inside the step): the driver relaunches
    # the cell twice, then settles it failed. Only the ledger knows the last of them tried the cell.
    never_wrote = _json("request", "create", "--assets", RAW_ORDERS, "--from", DAY, "--to", DAY, "--reprocess",
                        "completed", "--requested-by", "carol", "--reason", "no luck")["request_id"]
    bogus = {DAY: {"ops": {RAW_ORDERS: {"config": {"defect_days": {DAY: "bogus"}}}}}}
    failed_runs = []
    ledger = Ledger(env.catalog)
    while ledger.get(never_wrote).status == M.OPEN and len(failed_runs) < 5:
        record = ledger.get(never_wrote)
        for submission in drive_request(GRAPH, env.instance, env.catalog, record, code_version()):
            tags = {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}
            [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags=tags, run_config_for=bogus)
            assert not run.success
            failed_runs.append(run.run_id)
    assert len(failed_runs) == 3 and ledger.get(never_wrote).status == M.REQUEST_FAILED
    return {"production": production.run_id, "failed_production": failed_production.run_id,
            "other_asset": other_asset.run_id, "ranged": ranged.run_id, "chunked": chunked.run_id,
            "published": published, "rejected": rejected, "never_wrote": never_wrote, "failed_runs": failed_runs}


def test_show_cell_lists_every_try_across_requests_and_production_marking_this_requests(tried):
    env, tries = tried
    out = _json("request", "show", tries["rejected"], "--cell", CELL)
    assert (out["asset"], out["partition_key"], out["in_request"]) == (RAW_ORDERS, DAY, True)
    production, failed_production, ranged, chunked, published, rejected, *relaunched, never_wrote = out["tries"]
    assert tries["other_asset"] not in {t["dagster_run_id"] for t in out["tries"]}

    assert production["dagster_run_id"] == tries["production"] and production["lane"] == "production"
    assert production["request_id"] is None and production["requested_by"] is None
    assert production["state"] == "SUPERSEDED" and not production["this_request"]
    assert production["run_status"] == "SUCCESS"

    # Runs only Dagster knows: a production run, a Dagster range run and a chunk run that failed before writing.
    for t, run_id, lane in ((failed_production, tries["failed_production"], "production"),
                            (ranged, tries["ranged"], "production"), (chunked, tries["chunked"], "manual")):
        assert (t["dagster_run_id"], t["lane"], t["version_written"], t["decision"]) == (run_id, lane, False, None)
        assert (t["run_status"], t["error"], t["request_id"]) == ("FAILURE", "run failure, no version written", None)
        assert t["requested_at"] and t["ended_at"] and not t["this_request"]

    assert (published["request_id"], published["requested_by"], published["request_reason"]) == (
        tries["published"], "alice", "FX fix")
    assert published["state"] == "PUBLISHED" and published["lane"] == "backfill" and published["published_at"]
    assert published["checks"] and all(c["passed"] for c in published["checks"])

    assert rejected["this_request"] and rejected["state"] == "REJECTED" and rejected["requested_by"] == "bob"
    failed_checks = [c["name"] for c in rejected["checks"] if not c["passed"]]
    assert failed_checks and f"blocking check(s) failed: {failed_checks[0]}" in rejected["error"]
    assert rejected["published_at"] is None and rejected["ended_at"] and rejected["worker"]
    for field in ("logical_run_id", "dagster_run_id", "attempt_no", "version_id", "requested_at", "started_at"):
        assert rejected[field], field

    assert never_wrote["version_written"] is False and never_wrote["version_id"] is None
    # The last of its runs has the ledger's decision; the two relaunched before it are Dagster's to tell.
    assert (never_wrote["dagster_run_id"], never_wrote["request_id"], never_wrote["requested_by"]) == (
        tries["failed_runs"][-1], tries["never_wrote"], "carol")
    assert never_wrote["decision"] == "failed" and never_wrote["error"] == "run failure, no version written"
    assert never_wrote["lane"] == "backfill" and never_wrote["requested_at"] and never_wrote["checks"] == []
    assert [t["dagster_run_id"] for t in relaunched] == tries["failed_runs"][:-1]
    for t in relaunched:
        assert (t["request_id"], t["requested_by"], t["request_reason"]) == (tries["never_wrote"], "carol", "no luck")
        assert (t["decision"], t["run_status"], t["lane"], t["version_written"]) == (None, "FAILURE", "backfill", False)

    human = CliRunner().invoke(cli, ["request", "show", tries["rejected"], "--cell", CELL]).output
    assert f"{RAW_ORDERS} {DAY}: 9 try(ies)" in human and "no version written" in human
    assert human.count("no version written  Dagster FAILURE") == 5, human
    [marked] = [line for line in human.splitlines() if line.startswith("»")]
    assert rejected["version_id"] in marked and "by bob: check the checks" in marked


def test_versions_shows_who_asked_for_each_version_and_agrees_with_show_cell(tried):
    env, tries = tried
    versions = _json("versions", RAW_ORDERS, DAY)
    written = [t for t in _json("request", "show", tries["published"], "--cell", CELL)["tries"] if t["version_written"]]
    fields = ("version_id", "state", "dagster_run_id", "request_id", "requested_by", "request_reason", "lane")
    assert [{f: v[f] for f in fields} for v in versions] == [{f: t[f] for f in fields} for t in written]
    human = CliRunner().invoke(cli, ["versions", RAW_ORDERS, DAY]).output
    assert f"request {tries['published']} by alice: FX fix" in human and "no request (lane production)" in human


def test_a_cell_outside_the_request_is_listed_and_said_to_be_outside(tried):
    env, tries = tried
    out = _json("request", "show", tries["published"], "--cell", f"{RAW_ORDERS}/{FIRST_DAY}")
    # Its only tries: the multi-day runs over it and DAY, which wrote nothing.
    assert out["in_request"] is False
    assert [(t["dagster_run_id"], t["version_written"]) for t in out["tries"]] == [
        (tries["ranged"], False), (tries["chunked"], False)]


@pytest.mark.parametrize(
    "cell, message",
    [
        ("raw_orders", "must be ASSET/PARTITION"),
        ("/2022-09-02", "must be ASSET/PARTITION"),
        ("raw_orders/", "must be ASSET/PARTITION"),
        ("no_such_asset/2022-09-02", "unknown asset 'no_such_asset'"),
        ("raw_orders/2022-13-01", "not a valid calendar date"),
        ("raw_orders/2022-9-2", "YYYY-MM-DD"),
        ("raw_orders/../../etc", "unknown asset 'raw_orders/../..'"),  # an asset's key may hold "/" (a prefix)
        ("../../etc/passwd", "unknown asset '../../etc'"),
        (f"{DAILY_REVENUE}/2022-09-02\x00", "YYYY-MM-DD"),
    ],
)
def test_bad_cell_text_is_one_line_exit_2_and_writes_nothing(env, cell, message):
    rid = _json("request", "create", "--assets", RAW_ORDERS, "--from", DAY, "--to", DAY)["request_id"]
    with env.catalog.engine.connect() as conn:
        before = {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
                  for t in schema.metadata.sorted_tables}
    result = CliRunner().invoke(cli, ["request", "show", rid, "--cell", cell])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    with env.catalog.engine.connect() as conn:
        assert before == {t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar()
                          for t in schema.metadata.sorted_tables}
