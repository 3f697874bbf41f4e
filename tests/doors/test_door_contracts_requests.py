"""One answer per operation (tests/doors/test_door_contracts.py) for the operations on requests: create and its dry
run, clear and its dry run, pause, resume, cancel, list and the reconcile report (the Launchpad's
``backfill_report``). Those that write are done once per door, each on a day or a request of its own; those that
write nothing are asked of one shared state, three times, and answer the very same JSON."""

from __future__ import annotations

import pytest

from backfill_assets import backfills_for_instance
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.request_jobs import CLEAR_JOB, REPORT_JOB, REQUEST_JOB
from backfill_assets.service import ClearInput, RequestInput
from tests.doors.test_door_contracts import DAYS, as_printed, cli_json, job_result, same_record
from tests.instance_env import environment
from tests.orders import DEFS, run_partitions

WHO = dict(reason="contract", requested_by="ana")
CLI_WHO = ("--reason", "contract", "--requested-by", "ana")
DOORS = ["cli", "launchpad", "python"]  # each request's source: the door it was made from
# The shared state's requests are on days of their own, so a dry run over DAYS overlaps none of them.
REQUEST_DAYS = ["2022-09-05", "2022-09-06", "2022-09-07"]
# The tests asking the shared state stay on one xdist worker (--dist loadgroup): it is built once.
READ_ONLY = pytest.mark.xdist_group("doors/test_door_contracts_requests")


def test_create_answers_the_same_request_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    answers = [
        cli_json("request", "create", "--assets", ORDER_FACTS, "--from", DAYS[0], "--to", DAYS[0], *CLI_WHO),
        job_result(env, REQUEST_JOB, {"assets": [ORDER_FACTS], "from_day": DAYS[1], "to_day": DAYS[1], **WHO}),
        service.create(RequestInput(assets=[ORDER_FACTS], from_day=DAYS[2], to_day=DAYS[2], **WHO)).as_dict(),
    ]
    same_record(*answers)
    assert [a["source"] for a in answers] == DOORS and [a["partitions"] for a in answers] == [[d] for d in DAYS]
    assert {s.request.request_id for s in service.list()} == {a["request_id"] for a in answers}


def test_clear_answers_the_same_request_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    select = f"+{ORDER_FACTS}"
    answers = [
        cli_json("clear", "--select", select, "--partition", DAYS[0], "--yes", *CLI_WHO),
        job_result(env, CLEAR_JOB, {"select": select, "partition_key": DAYS[1], "dry_run": False, **WHO}),
        service.clear(ClearInput(select=select, partition_key=DAYS[2], **WHO)).as_dict(),
    ]
    same_record(*answers)
    assert [a["source"] for a in answers] == DOORS and [a["first"] for a in answers] == DAYS
    assert all(a["selected_assets"] == [RAW_ORDERS, ORDER_FACTS] and a["reprocess"] == "completed" for a in answers)


def test_pause_resume_and_cancel_answer_the_same_record_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    ids = [service.create(RequestInput(assets=[ORDER_FACTS], from_day=day, to_day=day, **WHO)).request.request_id
           for day in DAYS]
    answers = [
        cli_json("request", "pause", ids[0], "--reason", "maintenance", "--by", "ana"),
        job_result(env, "backfill_pause", {"request_id": ids[1], "reason": "maintenance", "by": "ana"}),
        service.pause(ids[2], "ana", "maintenance").as_dict(),
    ]
    same_record(*answers)
    assert [(a["request_id"], a["status"], a["already_paused"]) for a in answers] == [(i, "paused", False) for i in ids]
    answers = [
        cli_json("request", "resume", ids[0], "--by", "ana"),
        job_result(env, "backfill_resume", {"request_id": ids[1], "by": "ana"}),
        service.resume(ids[2], "ana").as_dict(),
    ]
    same_record(*answers)
    assert all(a["pause"]["resumed_by"] == "ana" and a["status"] != "paused" for a in answers)
    answers = [
        cli_json("request", "cancel", ids[0]),
        job_result(env, "backfill_cancel", {"request_id": ids[1]}),
        service.cancel(ids[2]).as_dict(),
    ]
    same_record(*answers)
    assert [(a["status"], a["already_cancelled"]) for a in answers] == [("cancelled", False)] * 3


@pytest.fixture(scope="module")
def requests_now(tmp_path_factory):
    """State the read-only tests ask of (none changes it): DAYS[0] published, three requests on REQUEST_DAYS, open,
    paused and cancelled."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        with environment(tmp_path_factory.mktemp("contracts") / "dagster_home", monkeypatch) as env:
            assert all(r.success for r in run_partitions(env.instance, DAYS[:1], assets=[RAW_ORDERS, ORDER_FACTS]))
            service = backfills_for_instance(DEFS, env.instance, env.catalog)
            ids = [service.create(RequestInput(assets=[ORDER_FACTS], from_day=day, to_day=day, **WHO)).request
                   .request_id for day in REQUEST_DAYS]
            service.pause(ids[1], "ana", "maintenance")
            service.cancel(ids[2])
            yield env, service, ids


@READ_ONLY
def test_a_dry_run_answers_the_same_plan_at_every_door(requests_now):
    env, service, _ = requests_now
    asked = dict(assets=[RAW_ORDERS, ORDER_FACTS], from_day=DAYS[0], to_day=DAYS[1])
    printed = cli_json("request", "create", "--assets", f"{RAW_ORDERS},{ORDER_FACTS}", "--from", DAYS[0], "--to",
                       DAYS[1], "--dry-run")
    assert printed == job_result(env, REQUEST_JOB, {**asked, "dry_run": True})
    assert printed == as_printed(service.plan(RequestInput(**asked)).as_dict())
    assert printed["dry_run"] is True and {c["action"] for c in printed["cells"]} == {"skip", "create"}


@READ_ONLY
def test_a_clear_dry_run_answers_the_same_plan_at_every_door(requests_now):
    env, service, _ = requests_now
    select, first, last = f"+{ORDER_FACTS}", DAYS[0], DAYS[1]
    printed = cli_json("clear", "--select", select, "--from", first, "--to", last)
    assert printed == job_result(env, CLEAR_JOB, {"select": select, "from_day": first, "to_day": last})
    assert printed == as_printed(service.clear(ClearInput(select=select, from_day=first, to_day=last),
                                               dry_run=True).as_dict())
    assert printed["dry_run"] is True and len(printed["cells"]) == 2 * 2


@READ_ONLY
def test_list_answers_the_same_requests_at_every_door(requests_now):
    env, service, ids = requests_now
    printed = cli_json("request", "list")
    assert printed == job_result(env, "backfill_list", {})
    assert printed == as_printed([s.as_dict() for s in service.list()])
    assert [r["request_id"] for r in printed] == ids[::-1]  # newest first
    assert [r["status"] for r in printed][:2] == ["cancelled", "paused"] and printed[1]["pause"]["paused_by"] == "ana"
    paused = cli_json("request", "list", "--status", "paused")
    assert paused == job_result(env, "backfill_list", {"status": ["paused"]}) == [printed[1]]


@READ_ONLY
def test_the_reconcile_report_is_the_same_at_every_door(requests_now):
    env, service, ids = requests_now
    printed = cli_json("reconcile", ids[1], exit_code=1)  # 1: the paused request is not complete
    assert printed == job_result(env, REPORT_JOB, {"request_id": ids[1]})
    assert printed == as_printed(service.reconcile(ids[1]).as_dict())
    assert printed["complete"] is False and printed["request"]["pause"]["reason"] == "maintenance"
