"""A person overrides what the checks decided, through the CLI against a real instance: `accept` publishes a
REJECTED version, `reject` takes a PUBLISHED one back, `skip` marks cells requests leave alone — each recorded
(overrides, versions, reconcile, Dagster's materialization metadata), and every bad input changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.sensors.propagation import propagate_once
from tests.corruption import file_halved_before_its_audits
from tests.driver_harness import drive
from tests.engine.catalog_helpers import begin_verified, identity
from tests.orders import GRAPH, run_partitions

DAY, DAY2 = "2022-09-01", "2022-09-02"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def ok(*args: str):
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def create(*args: str) -> str:
    return ok("request", "create", *args)["request_id"]


def rejected_by_defect(env, asset: str = DAILY_REVENUE, day: str = DAY, defect: str = "drop_rows", *extra: str):
    """A request whose run of ``asset`` ``day`` fails its checks: (the REJECTED version id, the request id)."""
    conf = json.dumps({asset: {"defect_days": {day: defect}}})
    rid = create("--assets", asset, "--from", day, "--to", day, "--reprocess", "completed", "--conf", conf, *extra)
    drive(env, rid)
    newest = env.catalog.versions_of(asset, day)[-1]
    assert newest.state == "REJECTED" and newest.request_id == rid
    return newest.version_id, rid


def latest_materialization(env, asset: str, day: str) -> dict:
    filter_ = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day])
    [record] = env.instance.fetch_materializations(filter_, limit=1).records  # newest first
    return {k: v.value for k, v in record.asset_materialization.metadata.items()}


def catalog_rows(env) -> dict[str, list]:
    """Every row of every catalog table: a refused override must leave all of them as they were."""
    with env.catalog.engine.connect() as conn:
        return {
            t.name: sorted((tuple(r) for r in conn.execute(sa.select(t)).all()), key=repr)
            for t in schema.metadata.sorted_tables
        }


def assert_refused(env, args: list[str], message: str) -> None:
    before = catalog_rows(env)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert catalog_rows(env) == before


# ---- accept -----------------------------------------------------------------------------------------------------


def test_accept_publishes_the_rejected_version_and_then_reprocess_none_or_failed_leave_the_cell_alone(env, tmp_path):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    served = env.catalog.current(DAILY_REVENUE, DAY).version_id
    rejected, rid = rejected_by_defect(env)

    out = ok("accept", rejected, "--approved-by", "ana", "--reason", "rows dropped on purpose: test orders")

    assert (out["action"], out["serving"], out["taken_off"]) == ("accept", rejected, served)
    current = env.catalog.current(DAILY_REVENUE, DAY)
    assert (current.version_id, current.state) == (rejected, "PUBLISHED")
    assert env.catalog.get(served).state == "SUPERSEDED"
    # Dagster's partition page: the accepted version serves, named as published by a person despite its checks.
    meta = latest_materialization(env, DAILY_REVENUE, DAY)
    assert (meta["version_id"], meta["override"], meta["override_by"]) == (rejected, "accept", "ana")
    assert meta["override_reason"] == "rows dropped on purpose: test orders"
    assert meta["failed_checks"] != "none recorded"
    assert out["dagster_event"] == f"recorded a runless materialization of {rejected}"
    # versions: the override beside the version it published.
    row = next(r for r in ok("versions", DAILY_REVENUE, DAY) if r["version_id"] == rejected)
    assert [(o["action"], o["by"]) for o in row["overrides"]] == [("accept", "ana")]
    assert "override: accept by ana" in invoke("versions", DAILY_REVENUE, DAY).output
    # reconcile: the request's rejected cell now serves, decided by the override; no gap (the event was recorded).
    report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
    [cell] = report["cells"]
    assert (cell["decision"], cell["override"]["action"], cell["override"]["by"]) == ("published", "accept", "ana")
    assert "accepted by ana" in cell["reason"] and cell["versions"][-1]["overrides"][0]["action"] == "accept"
    assert (report["totals"]["accepted"], report["complete"], report["gaps"]) == (1, True, [])
    html = tmp_path / "r.html"
    assert CliRunner().invoke(cli, ["reconcile", rid, "--html", str(html)]).exit_code == 0
    assert "override: accept by ana" in html.read_text()
    # The cell's try history names the override on the try it published.
    tries = ok("request", "show", rid, "--cell", f"{DAILY_REVENUE}/{DAY}")["tries"]
    accepted = next(t for t in tries if t["version_id"] == rejected)
    assert [(o["action"], o["by"]) for o in accepted["overrides"]] == [("accept", "ana")]
    assert "override: accept by ana" in invoke("request", "show", rid, "--cell", f"{DAILY_REVENUE}/{DAY}").output

    attempts = len(env.catalog.versions_of(DAILY_REVENUE, DAY))
    for policy in (M.ReprocessPolicy.NONE, M.ReprocessPolicy.FAILED):
        again = create("--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY, "--reprocess", policy)
        assert drive(env, again) == [], policy
        [skipped] = Ledger(env.catalog).cells(again)
        assert skipped.decision == M.SKIPPED and "PUBLISHED" in skipped.reason
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == rejected
    assert len(env.catalog.versions_of(DAILY_REVENUE, DAY)) == attempts


def test_accept_while_its_cascade_request_is_open_propagates_downstream_like_any_publish(env):
    run_partitions(env.instance, [DAY, DAY2])
    conf = json.dumps({ORDER_FACTS: {"defect_days": {DAY: "duplicate_keys"}}})
    rid = create("--assets", ORDER_FACTS, "--from", DAY, "--to", DAY2, "--reprocess", "completed",
                 "--downstream", "cascade", "--max-active", "1", "--partitions-per-run", "1", "--conf", conf)
    drive(env, rid, stop_after_ticks=1)
    rejected = env.catalog.versions_of(ORDER_FACTS, DAY)[-1]
    assert rejected.state == "REJECTED" and Ledger(env.catalog).get(rid).status == M.OPEN
    assert (DAILY_REVENUE, DAY) not in {c.key for c in Ledger(env.catalog).cells(rid)}

    ok("accept", rejected.version_id, "--approved-by", "ana", "--reason", "the duplicates are two real orders")
    drive(env, rid)

    # The propagation sensor read the accept's publish like any other: the day's downstream joined the request
    # and was recomputed from the accepted version.
    cells = {c.key: c for c in Ledger(env.catalog).cells(rid)}
    assert cells[(DAILY_REVENUE, DAY)].origin == "cascade" and cells[(CUSTOMER_SNAPSHOT, DAY)].origin == "cascade"
    revenue = env.catalog.current(DAILY_REVENUE, DAY)
    assert revenue.request_id == rid
    assert revenue.input_versions[f"{ORDER_FACTS}/{DAY}"] == rejected.version_id
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED


def test_accept_of_a_closed_requests_version_cascades_through_a_request_of_its_own(env):
    run_partitions(env.instance, [DAY, DAY2])
    rejected, rid = rejected_by_defect(env, ORDER_FACTS, DAY, "duplicate_keys", "--downstream", "cascade")
    assert Ledger(env.catalog).get(rid).status == M.REQUEST_FAILED  # its day was rejected: not done
    replaced = env.catalog.current(ORDER_FACTS, DAY).version_id
    cells_before = Ledger(env.catalog).cells(rid)

    out = ok("accept", rejected, "--approved-by", "ana", "--reason", "two real orders", "--cascade")

    propagate_once(GRAPH, env.catalog)
    assert Ledger(env.catalog).cells(rid) == cells_before, "a closed request takes no new cells"
    readers = {c["consumer_version_id"].split("/")[0] for c in out["consumers"]}
    assert readers == {DAILY_REVENUE, CUSTOMER_SNAPSHOT} and out["taken_off"] == replaced
    cascade = out["cascade_request_id"]
    assert Ledger(env.catalog).get(cascade).spec.reason.startswith(f"accept cascade: {rejected}")
    drive(env, cascade)
    assert env.catalog.current(DAILY_REVENUE, DAY).input_versions[f"{ORDER_FACTS}/{DAY}"] == rejected
    assert env.catalog.current(CUSTOMER_SNAPSHOT, DAY2).request_id == cascade  # and further down the lineage


@pytest.mark.parametrize("kind", ["abandoned", "writing", "verifying", "corrupt_file", "overwritten", "published",
                                  "superseded_by_newer"])
def test_accept_refuses_anything_but_a_rejected_version_that_verifies_and_is_still_the_latest_judged(
    env, kind, tmp_path, monkeypatch
):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    message = {
        "abandoned": "is ABANDONED: its attempt was abandoned before its checks concluded",
        "writing": "is WRITING: it is still being written",
        "verifying": "is VERIFYING: its checks have not concluded",
        "corrupt_file": "its stored file does not verify",
        "overwritten": "its stored file does not verify",
        "published": "is PUBLISHED: it is already published",
        "superseded_by_newer": "after it was judged",
    }[kind]
    if kind in ("abandoned", "writing"):
        version_id = env.catalog.begin_version(identity("run-x", key=DAY, asset=DAILY_REVENUE)).version_id
        if kind == "abandoned":
            env.catalog.abandon(version_id, "its worker died")
    elif kind == "verifying":
        version_id = begin_verified(env.catalog, identity("run-x", key=DAY, asset=DAILY_REVENUE))
    elif kind == "published":
        version_id = env.catalog.current(DAILY_REVENUE, DAY).version_id
    elif kind == "corrupt_file":  # rejected by the file-integrity check: its bytes were damaged before the audits
        with file_halved_before_its_audits(env.settings.catalog_url, DAILY_REVENUE, DAY, tmp_path / "hold",
                                           monkeypatch):
            [run] = run_partitions(env.instance, [DAY], assets=[DAILY_REVENUE])
        version_id = env.catalog.versions_of(DAILY_REVENUE, DAY)[-1].version_id
        assert not run.success and env.catalog.get(version_id).state == "REJECTED"
    else:
        version_id, _ = rejected_by_defect(env)
        if kind == "overwritten":
            Path(env.catalog.get(version_id).path).write_bytes(b"not the bytes the catalog recorded")
        else:
            run_partitions(env.instance, [DAY], assets=[DAILY_REVENUE])  # a newer version published after it
    assert_refused(env, ["accept", version_id, "--approved-by", "ana", "--reason", "looks fine"], message)


# ---- reject -----------------------------------------------------------------------------------------------------


def test_reject_rolls_back_lists_who_read_it_and_cascade_reruns_them_on_the_restored_version(env):
    [first] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    [second] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    invoke("read", ORDER_FACTS, DAY, "--reader", "notebook")
    bad, good = f"{ORDER_FACTS}/{DAY}/{second.run_id}/1", f"{ORDER_FACTS}/{DAY}/{first.run_id}/1"

    out = ok("reject", ORDER_FACTS, DAY, "--reason", "FX table was stale", "--by", "ben", "--cascade")

    assert (out["action"], out["taken_off"], out["serving"]) == ("reject", bad, good)
    assert (out["override"]["action"], out["override"]["by"]) == ("reject", "ben")
    consumers = {c["consumer"] for c in out["consumers"]}
    assert f"{DAILY_REVENUE}/{DAY}/{second.run_id}/1" in consumers and "external:notebook" in consumers
    assert env.catalog.get(bad).state == "REJECTED" and env.catalog.current(ORDER_FACTS, DAY).version_id == good
    meta = latest_materialization(env, ORDER_FACTS, DAY)
    assert (meta["version_id"], meta["rejected_version_id"], meta["override"]) == (good, bad, "reject")
    assert "override: reject by ben" in invoke("versions", ORDER_FACTS, DAY).output

    assert drive(env, out["cascade_request_id"])
    revenue = env.catalog.current(DAILY_REVENUE, DAY)
    assert revenue.request_id == out["cascade_request_id"] and revenue.input_versions[f"{ORDER_FACTS}/{DAY}"] == good
    # The rejected version is never a rollback target again: there is nothing earlier than the restored one.
    assert_refused(env, ["rollback", ORDER_FACTS, DAY, "--reason", "undo"], "no previous verified version")


def test_a_rejected_cell_counts_as_rejected_in_its_request_and_reprocess_failed_reruns_it(env):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    rid = create("--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY, "--reprocess", "completed")
    drive(env, rid)
    published = env.catalog.current(DAILY_REVENUE, DAY).version_id
    human = invoke("reject", DAILY_REVENUE, DAY, "--reason", "wrong region mapping", "--by", "ben")
    assert human.exit_code == 0 and f"rejected {published}\n" in human.output
    assert "override: rejected after publish by ben at" in human.output

    report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
    [cell] = report["cells"]
    assert (cell["decision"], cell["override"]["action"]) == ("rejected", "reject")
    assert "rejected after publish by ben at" in cell["reason"] and cell["reason"].endswith(": wrong region mapping")
    assert (report["totals"]["rejected_after_publish"], report["totals"]["rejected"], report["complete"]) == (
        1, 1, False
    )
    rerun = create("--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY, "--reprocess", "failed")
    assert [(p, a) for p, a, _ in drive(env, rerun)] == [(DAY, (DAILY_REVENUE,))]
    assert env.catalog.current(DAILY_REVENUE, DAY).request_id == rerun


# ---- skip -------------------------------------------------------------------------------------------------------


def test_a_skipped_cell_is_left_alone_by_reprocess_none_and_failed_and_rerun_by_completed(env):
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    run_partitions(env.instance, [DAY2], assets=[RAW_ORDERS, ORDER_FACTS])
    rejected_by_defect(env)  # DAY's newest attempt REJECTED; DAY2 has no version: `failed` would run both
    out = ok("skip", DAILY_REVENUE, "--from", DAY, "--to", DAY2, "--reason", "finance closed", "--by", "ops")
    assert [(c["partition_key"], c["action"]) for c in out["cells"]] == [(DAY, "skip"), (DAY2, "skip")]
    window = ("--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY2)

    for policy in (M.ReprocessPolicy.NONE, M.ReprocessPolicy.FAILED):
        plan = ok("request", "create", *window, "--reprocess", policy, "--dry-run")["cells"]
        assert {(c["action"], c["reason"]) for c in plan} == {("skip", "marked skipped by ops: finance closed")}
        rid = create(*window, "--reprocess", policy)
        assert drive(env, rid) == [], policy
        report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
        assert (report["totals"]["skipped"], report["totals"]["marked_skipped"], report["complete"]) == (2, 2, True)
        assert {c["override"]["action"] for c in report["cells"]} == {"skip"}
    assert "marked skipped by ops" in invoke("versions", DAILY_REVENUE, DAY2).output

    plan = ok("request", "create", *window, "--reprocess", "completed", "--dry-run")["cells"]
    assert all(c["action"] == "create" and "marked skipped by ops" in c["reason"] for c in plan)
    rid = create(*window, "--reprocess", "completed")
    drive(env, rid)
    assert {d: env.catalog.current(DAILY_REVENUE, d).request_id for d in (DAY, DAY2)} == {DAY: rid, DAY2: rid}


def test_undo_withdraws_a_skip_mark_and_the_audit_trail_keeps_both(env):
    run_partitions(env.instance, [DAY, DAY2], assets=[RAW_ORDERS, ORDER_FACTS])
    human = invoke("skip", DAILY_REVENUE, "--from", DAY, "--to", DAY2, "--reason", "no data")
    assert human.output == f"marked skipped 2 cell(s) of {DAILY_REVENUE}: {DAY}, {DAY2}\n"
    out = ok("skip", DAILY_REVENUE, DAY2, "--undo", "--reason", "the data arrived", "--by", "ops")
    assert [(c["partition_key"], c["action"], c["by"]) for c in out["cells"]] == [(DAY2, "unskip", "ops")]

    plan = ok("request", "create", "--assets", DAILY_REVENUE, "--from", DAY, "--to", DAY2, "--reprocess", "none",
              "--dry-run")["cells"]
    assert [(c["partition_key"], c["action"]) for c in plan] == [(DAY, "skip"), (DAY2, "create")]
    assert [o.action for o in env.catalog.overrides_of_cell(DAILY_REVENUE, DAY2)] == ["skip", "unskip"]
    assert_refused(env, ["skip", DAILY_REVENUE, DAY2, "--undo", "--reason", "again"], "not marked skipped")


# ---- bad input --------------------------------------------------------------------------------------------------


BAD_INPUT = [
    pytest.param(["accept", f"{DAILY_REVENUE}/{DAY}/nope/1", "--approved-by", "ana", "--reason", "x"],
                 "unknown version", id="accept-unknown-version"),
    pytest.param(["accept", "../../etc/passwd", "--approved-by", "ana", "--reason", "x"], "is not <asset>",
                 id="accept-path-as-id"),
    pytest.param(["accept", f"{DAILY_REVENUE}/../x/1", "--approved-by", "ana", "--reason", "x"], "contains '..'",
                 id="accept-dotdot-id"),
    pytest.param(["accept", f"{DAILY_REVENUE}/{DAY}\x00/r/1", "--approved-by", "ana", "--reason", "x"], "NUL",
                 id="accept-nul-id"),
    pytest.param(["accept", f"{DAILY_REVENUE}/{DAY}/r/01", "--approved-by", "ana", "--reason", "x"],
                 "not canonical", id="accept-non-canonical-id"),
    pytest.param(["accept", f"no_such_asset/{DAY}/r/1", "--approved-by", "ana", "--reason", "x"], "unknown asset",
                 id="accept-unknown-asset"),
    pytest.param(["accept", f"{DAILY_REVENUE}/{DAY}/r/1", "--reason", "x"], "--approved-by",
                 id="accept-missing-approved-by"),
    pytest.param(["accept", f"{DAILY_REVENUE}/{DAY}/r/1", "--approved-by", "ana"], "--reason",
                 id="accept-missing-reason"),
    pytest.param(["accept", "CURRENT", "--approved-by", "ana", "--reason", "   "], "--reason",
                 id="accept-blank-reason"),
    pytest.param(["accept", "CURRENT", "--approved-by", "ana\nerror: injected", "--reason", "x"], "--approved-by",
                 id="accept-approver-with-newline"),
    pytest.param(["accept", "CURRENT", "--approved-by", "ana", "--reason", "x" * 2001], "--reason",
                 id="accept-reason-too-long"),
    pytest.param(["reject", "no_such_asset", DAY, "--reason", "x"], "unknown asset", id="reject-unknown-asset"),
    pytest.param(["reject", DAILY_REVENUE, "2022-13-01", "--reason", "x"], "not a valid calendar date",
                 id="reject-malformed-day"),
    pytest.param(["reject", DAILY_REVENUE, "../../etc", "--reason", "x"], "YYYY-MM-DD", id="reject-hostile-day"),
    pytest.param(["reject", DAILY_REVENUE, DAY], "--reason", id="reject-missing-reason"),
    pytest.param(["reject", DAILY_REVENUE, DAY, "--reason", "x", "--by", "a\x07b"], "--by", id="reject-bad-by"),
    pytest.param(["reject", DAILY_REVENUE, DAY2, "--reason", "x"], "no published version", id="reject-nothing"),
    pytest.param(["reject", DAILY_REVENUE, DAY, "--reason", "x"], "no earlier verified version",
                 id="reject-without-an-earlier-version"),
    pytest.param(["skip", "no_such_asset", DAY, "--reason", "x"], "unknown asset", id="skip-unknown-asset"),
    pytest.param(["skip", DAILY_REVENUE, "2022-9-1", "--reason", "x"], "YYYY-MM-DD", id="skip-malformed-day"),
    pytest.param(["skip", DAILY_REVENUE, DAY], "--reason", id="skip-missing-reason"),
    pytest.param(["skip", DAILY_REVENUE, "--from", DAY, "--reason", "x"], "--from D --to D", id="skip-half-range"),
    pytest.param(["skip", DAILY_REVENUE, DAY, "--from", DAY, "--to", DAY2, "--reason", "x"], "not both",
                 id="skip-day-and-range"),
    pytest.param(["skip", DAILY_REVENUE, "--from", DAY2, "--to", DAY, "--reason", "x"], "is before --from",
                 id="skip-backward-range"),
    pytest.param(["skip", DAILY_REVENUE, "2099-01-01", "--reason", "x"], "past the newest complete interval",
                 id="skip-future-day"),
    pytest.param(["skip", DAILY_REVENUE, "--from", DAY, "--to", "2099-01-01", "--reason", "x"],
                 "--to 2099-01-01 is past the newest complete interval", id="skip-range-into-the-future"),
    pytest.param(["skip", DAILY_REVENUE, "--from", "2022-09-01", "--to", "9999-12-01", "--reason", "x"],
                 "past the newest complete interval", id="skip-huge-range"),
    pytest.param(["skip", DAILY_REVENUE, "--from", "2022-09-01", "--to", "9999-12-01", "--undo", "--reason", "x"],
                 "at most", id="unskip-huge-range"),
    pytest.param(["skip", DAILY_REVENUE, DAY, "--undo", "--reason", "x"], "not marked skipped",
                 id="skip-undo-unmarked"),
]


@pytest.fixture(scope="module")
def one_published_day(refusal_env):
    """DAY published once (no earlier version, no marks): the refusals' shared state; returns its version id."""
    run_partitions(refusal_env.instance, [DAY], assets=PIPELINE)
    return refusal_env.catalog.current(DAILY_REVENUE, DAY).version_id


@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_override_input_is_one_line_exit_2_and_changes_no_catalog_row(refusal_env, one_published_day, args,
                                                                         message):
    assert_refused(refusal_env, [one_published_day if a == "CURRENT" else a for a in args], message)
