"""``request pause`` / ``request resume`` through the CLI on a real instance, the driver's logic in-process: a paused
request launches nothing, settles the runs it had in flight, keeps its claims, shows who paused it, when and why,
and goes on with the same frozen cells when resumed; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import subprocess

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.runs.reconcile_facts import request_report
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_tags_for
from backfill_assets.integration.ui_markdown import report_markdown
from tests.driver_harness import drive, execute_submission
from tests.orders import GRAPH, MODULE
from tests.specs import spec_of

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]
WIDE = {"COLUMNS": "250"}  # rich tables at this width keep a paused status on one line


def invoke(*args: str, **options):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False, **options)


def _json(*args: str) -> dict:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _create(first: str = DAYS[0], last: str = DAYS[-1], *extra: str) -> str:
    return _json("request", "create", "--assets", RAW_ORDERS, "--from", first, "--to", last, "--max-active", "2",
                 "--partitions-per-run", "1", "--reason", "FX fix", *extra)["request_id"]


def _first_tick(env, request_id: str):
    """One driver tick while the request is open: the runs it submits are in flight when the test pauses it."""
    record = Ledger(env.catalog).get(request_id)
    return record, drive_request(GRAPH, env.instance, env.catalog, record, code_version())


def _queued_run(env, record, submission) -> dg.DagsterRun:
    """The run of a submission created by Dagster itself (``dagster job launch`` through the instance's run queue)
    and left queued: no daemon dequeues it here."""
    tags = {**run_tags_for(record), RUN_KEY_TAG: submission.run_key, T.DAGSTER_PARTITION: submission.partition}
    subprocess.run(
        [dagster_bin("dagster"), "job", "launch", "-m", MODULE, "-a", "defs", "-j", BACKFILL_JOB,
         "--tags", json.dumps(tags)],
        check=True, capture_output=True, timeout=120,
    )
    [run] = env.instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: submission.run_key}))
    assert run.status == dg.DagsterRunStatus.QUEUED
    return run


def _decisions(env, request_id: str) -> dict[str, str]:
    return {c.partition_key: c.decision for c in Ledger(env.catalog).cells(request_id)}


def _frozen(env, request_id: str) -> tuple:
    """The frozen plan: the request row but its status and message, and its cells in order."""
    row = Ledger(env.catalog).get(request_id).row
    cells = [(c.asset, c.partition_key, c.ordinal, c.origin) for c in Ledger(env.catalog).cells(request_id)]
    return {k: v for k, v in row.items() if k not in ("status", "message", "closed_at")}, cells


def _tables(env) -> dict[str, list]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted(map(tuple, conn.execute(sa.select(t)).all()))
                for t in (schema.requests, schema.request_items, schema.claims, schema.request_pauses)}


def test_a_paused_request_submits_nothing_settles_its_run_in_flight_and_resume_completes_the_same_cells(env):
    rid = _create()
    frozen = _frozen(env, rid)
    record, in_flight = _first_tick(env, rid)
    assert [s.partition for s in in_flight] == DAYS[:2]

    paused = _json("request", "pause", rid, "--reason", "warehouse maintenance", "--by", "alice")
    assert (paused["status"], paused["already_paused"], paused["in_flight"]) == (M.PAUSED, False, 2)
    assert (paused["pause"]["paused_by"], paused["pause"]["reason"]) == ("alice", "warehouse maintenance")
    for submission in in_flight:  # the runs launched before the pause finish now
        assert execute_submission(env, record, submission).success

    assert drive(env, rid, max_ticks=3) == []  # three ticks: nothing launched
    assert _decisions(env, rid) == {DAYS[0]: M.PUBLISHED, DAYS[1]: M.PUBLISHED, DAYS[2]: M.PENDING}
    assert Ledger(env.catalog).get(rid).status == M.PAUSED

    resumed = _json("request", "resume", rid, "--by", "bob")
    assert resumed["status"] == M.OPEN and resumed["pause"]["resumed_by"] == "bob"
    assert [partition for partition, _, _ in drive(env, rid)] == [DAYS[2]]
    assert Ledger(env.catalog).get(rid).status == M.COMPLETED
    assert set(_decisions(env, rid).values()) == {M.PUBLISHED}
    assert _frozen(env, rid) == frozen


def test_a_paused_request_keeps_its_claims_so_an_overlapping_request_is_refused_or_waits(env):
    rid = _create()
    _json("request", "pause", rid, "--by", "alice")
    refused = CliRunner().invoke(cli, ["request", "create", "--assets", RAW_ORDERS, "--from", DAYS[1], "--to",
                                       DAYS[1]])
    assert refused.exit_code == 2 and f"overlaps an open request: {rid} holds" in refused.output, refused.output
    waiting = _create(DAYS[1], DAYS[1], "--wait-for-overlap")
    assert drive(env, waiting, max_ticks=2) == [] and Ledger(env.catalog).get(waiting).status == M.WAITING


def test_pausing_with_runs_in_flight_then_cancelling_terminates_them_and_cancels_the_pending_cells(env):
    rid = _create()
    record, (finishing, queued) = _first_tick(env, rid)
    _json("request", "pause", rid, "--by", "alice")
    assert execute_submission(env, record, finishing).success  # finishes while paused
    waiting_in_queue = _queued_run(env, record, queued)  # still in the queue when the request is cancelled
    assert drive(env, rid, max_ticks=2) == []
    assert _decisions(env, rid) == {DAYS[0]: M.PUBLISHED, DAYS[1]: M.SUBMITTED, DAYS[2]: M.PENDING}

    cancelled = _json("request", "cancel", rid)
    assert cancelled["terminated_runs"] == [waiting_in_queue.run_id] and cancelled["forced_runs"] == []
    assert env.instance.get_run_by_id(waiting_in_queue.run_id).status == dg.DagsterRunStatus.CANCELED
    assert _decisions(env, rid) == {DAYS[0]: M.PUBLISHED, DAYS[1]: M.CELL_CANCELLED, DAYS[2]: M.CELL_CANCELLED}
    shown = _json("request", "show", rid)
    assert shown["status"] == M.CANCELLED and shown["pause"] is None
    assert [(p["paused_by"], p["resumed_at"]) for p in shown["pauses"]] == [("alice", None)]
    assert _tables(env)["claims"] == []


def test_list_show_reconcile_wait_and_the_ui_report_show_who_paused_it_when_and_why(env, tmp_path):
    rid = _create(DAYS[0], DAYS[0])
    record, [only] = _first_tick(env, rid)
    _json("request", "pause", rid, "--reason", "warehouse maintenance", "--by", "alice")
    assert execute_submission(env, record, only).success
    drive(env, rid, max_ticks=1)
    assert _decisions(env, rid) == {DAYS[0]: M.PUBLISHED}  # every cell done, and the request stays paused
    pause = Ledger(env.catalog).get(rid).row["message"]
    assert pause.startswith("paused by alice at ") and pause.endswith(": warehouse maintenance")

    [listed] = _json("request", "list")
    assert listed["status"] == M.PAUSED and listed["pause"]["paused_by"] == "alice"
    assert pause in invoke("request", "list", env=WIDE).output
    shown = _json("request", "show", rid)
    assert shown["pause"]["reason"] == "warehouse maintenance" and shown["pause"]["status_before"] == M.OPEN
    assert pause in invoke("request", "show", rid, env=WIDE).output
    report = json.loads(CliRunner().invoke(cli, ["reconcile", rid, "--json"]).output)
    assert report["request"]["status"] == M.PAUSED and report["request"]["pause"]["paused_by"] == "alice"
    assert pause in CliRunner().invoke(cli, ["reconcile", rid, "--html", str(tmp_path / "r.html")], env=WIDE).output
    html = (tmp_path / "r.html").read_text()
    assert 'class="paused">paused</b> by alice' in html and "warehouse maintenance" in html
    assert pause in report_markdown(request_report(env.instance, env.catalog, GRAPH, rid))

    waited = CliRunner().invoke(cli, ["request", "wait", rid, "--timeout", "0.5", "--json"])
    assert waited.exit_code == 3, waited.output  # not finished: paused, however done its cells are
    assert json.loads(waited.output)["status"] == M.PAUSED and json.loads(waited.output)["complete"] is False

    again = _json("request", "pause", rid, "--reason", "something else", "--by", "bob")
    assert again["already_paused"] is True and again["pause"]["paused_by"] == "alice"
    _json("request", "resume", rid)
    drive(env, rid, max_ticks=1)  # resumed: the next tick closes it
    assert CliRunner().invoke(cli, ["request", "wait", rid, "--timeout", "5"]).exit_code == 0


@pytest.fixture
def requests_of_every_kind(env) -> dict[str, str]:
    """An open request, a completed one and an adopted Dagster backfill."""
    done = _create(DAYS[0], DAYS[0])
    drive(env, done)
    spec = spec_of(GRAPH, DAYS[-1], assets=RAW_ORDERS, first=DAYS[1], last=DAYS[1], requested_by="ui")
    adopted = Ledger(env.catalog).create("dg-abcdefgh", spec, code_version(), {}, source=M.RequestSource.DAGSTER)
    return {"open": _create(DAYS[2], DAYS[2]), "completed": done, "adopted": adopted.request_id}


@pytest.mark.parametrize(
    "args, message",
    [
        (["pause", "req-20220901-00000000"], "unknown request 'req-20220901-00000000'"),
        (["pause", "../../etc"], "is not of the form"),
        (["pause", "{completed}"], "is completed; only a waiting, open or blocked request can be paused"),
        (["pause", "{adopted}"], "is a Dagster backfill (source dagster)"),
        (["resume", "{open}"], "is not paused (it is open)"),
        (["resume", "req-20220901-00000000"], "unknown request"),
        (["pause", "{open}", "--by", " "], "--by must name someone"),
        (["pause", "{open}", "--reason", "x\x00y"], "contains a control character"),
    ],
    ids=["unknown", "hostile-id", "completed", "adopted", "resume-not-paused", "resume-unknown", "empty-by",
         "nul-in-reason"],
)
def test_bad_pause_or_resume_is_one_line_exit_2_and_writes_nothing(env, requests_of_every_kind, args, message):
    args = [a.format(**requests_of_every_kind) for a in args]
    before = _tables(env)
    result = CliRunner().invoke(cli, ["request", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert _tables(env) == before


def test_a_queued_runs_cancel_is_not_held_to_the_code_servers_deadline(env):
    """Cancelling a QUEUED run is a write to Dagster's storage, with no code server to wait for: even with no
    time at all for code servers to answer, the queued run is terminated, not misreported as forced."""
    from backfill_assets.integration.runs.cancel import terminate_request_runs
    from backfill_assets.service.control import close_request

    rid = _create(DAYS[0], DAYS[0])
    record, [only] = _first_tick(env, rid)
    queued = _queued_run(env, record, only)
    submitted, _ = close_request(Ledger(env.catalog), rid)
    outcome = terminate_request_runs(env.instance, env.catalog, rid, submitted, terminate_timeout=0.0)
    assert (outcome.terminated, outcome.forced) == ([queued.run_id], [])
    assert env.instance.get_run_by_id(queued.run_id).status == dg.DagsterRunStatus.CANCELED
