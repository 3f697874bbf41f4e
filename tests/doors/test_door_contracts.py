"""One answer per operation: the CLI's ``--json``, the Launchpad job's ``result`` and the Python call's record are
one serialization (the record's ``as_dict()``), for every operation that has both a Launchpad job and a CLI
command. An operation that writes is done once per door on separate but equivalent state (a day, a request or a
handoff of its own) and the three answers are the same record but for the values of PER_CALL; one that writes
nothing is asked three times of the same state and answers the very same thing. This module holds the operations
on versions and cells (rollback, reject, accept, skip, register, gc) and the handoff decisions;
test_door_contracts_requests.py the operations on requests."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store.handoffs import Handoffs
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.service import RequestInput
from tests.launchpad.test_operation_jobs import launch, op_of
from tests.orders import DEFS, run_partitions

DAYS = ["2022-09-02", "2022-09-03", "2022-09-04"]
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
# Values that differ by door or by day, wherever they are in the record; every other key and value is the same
# record's.
PER_CALL = {
    "asset", "partition_key", "taken_off", "serving", "seq", "consumers", "override", "dagster_event",
    "tables", "request_id", "requested_at", "confirmed_at", "partitions", "message",
    # Who the system saw act, stored beside the name stated: the OS user at the CLI and in Python, Dagster's
    # launching user (the run's dagster/user tag) on the Launchpad.
    "system_user",
    # The door a request was made from (cli, launchpad, python), asserted where a door creates one. (A
    # registration's ``source`` is its file: the register test asserts it the same at every door.)
    "source",
    # When each door's call happened.
    "at", "paused_at", "resumed_at", "created_at", "decided_at", "deadline",
    # What each call wrote or purged, named by an id of its own: a handoff, a version (its stored file's digest
    # and path).
    "handoff_id", "version_id", "sha256", "path",
    # The day each door's clear asked for, as clear words it back.
    "first", "last", "days_asked",
}


def cli_json(*args: str, exit_code: int = 0) -> object:
    """The command's ``--json``; ``exit_code``: its status (reconcile's 1: the request is not complete)."""
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == exit_code, result.output
    return json.loads(result.output)


def job_result(env, job: str, config: dict) -> object:
    """The Launchpad job's ``result`` metadata, its run launched in-process as the UI's user."""
    run = launch(env, job, config)
    assert run.success, [e.message for e in run.all_events if e.is_failure]
    [output] = [e for e in run.events_for_node(op_of(job)) if e.is_successful_output]
    return output.step_output_data.metadata["result"].value


def as_printed(record: object) -> object:
    """A Python answer (a record's ``as_dict()``, or a list of them) as JSON prints it: times and enums as text."""
    return json.loads(json.dumps(record, default=str))


def _shape(value: object) -> object:
    """``value`` with every PER_CALL key's value, at any depth, left out (None)."""
    if isinstance(value, dict):
        return {k: (None if k in PER_CALL else _shape(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


def same_record(*answers: dict) -> None:
    shapes = [_shape(as_printed(answer)) for answer in answers]
    differing = {k for shape in shapes for k in shapes[0].keys() | shape.keys() if shape.get(k) != shapes[0].get(k)}
    assert not differing, {k: [shape.get(k) for shape in shapes] for k in differing}


def test_rollback_reject_and_accept_answer_the_same_record_at_every_door(env):
    for _ in range(3):  # three versions a day: a rollback and a reject each still have one to restore
        assert all(r.success for r in run_partitions(env.instance, DAYS, assets=PIPELINE))
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    rollback = dict(asset=ORDER_FACTS, reason="bad fx", by="ana")
    answers = [
        cli_json("rollback", ORDER_FACTS, DAYS[0], "--reason", "bad fx", "--by", "ana"),
        job_result(env, "backfill_rollback", {"partition_key": DAYS[1], **rollback}),
        service.rollback(partition_key=DAYS[2], **rollback).as_dict(),
    ]
    same_record(*answers)
    assert {a["action"] for a in answers} == {"rollback"} and all(a["taken_off"] and a["serving"] for a in answers)
    reject = dict(asset=ORDER_FACTS, reason="still bad")
    answers = [
        cli_json("reject", ORDER_FACTS, DAYS[0], "--reason", "still bad", "--by", "ana"),
        job_result(env, "backfill_reject", {"partition_key": DAYS[1], "by": "ana", **reject}),
        service.reject(partition_key=DAYS[2], by="ana", **reject).as_dict(),
    ]
    same_record(*answers)
    assert {a["action"] for a in answers} == {"reject"}
    # Each door accepts the version it rejected: published again, on a person's word.
    rejected = [a["taken_off"] for a in answers]
    accept = dict(approved_by="ana", reason="fine after all")
    answers = [
        cli_json("accept", rejected[0], "--approved-by", "ana", "--reason", "fine after all"),
        job_result(env, "backfill_accept", {"version_id": rejected[1], **accept}),
        service.accept(rejected[2], **accept).as_dict(),
    ]
    same_record(*answers)
    assert {a["action"] for a in answers} == {"accept"} and [a["serving"] for a in answers] == rejected


def test_confirm_answers_the_same_record_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    ids = [service.create(RequestInput(assets=[ORDER_FACTS], from_day=day, to_day=day, downstream="cascade",
                                       confirm_cascade=True, reason="contract")).request.request_id for day in DAYS]
    answers = [
        cli_json("request", "confirm", ids[0]),
        job_result(env, "backfill_confirm", {"request_id": ids[1]}),
        service.confirm(ids[2]).as_dict(),
    ]
    same_record(*answers)
    assert [a["request_id"] for a in answers] == ids and all(a["confirmed_at"] for a in answers)


def test_gc_and_its_dry_run_answer_the_same_record_at_every_door(env):
    """Three versions of a day: the first is past retention (the second, the current one's rollback target, is
    kept). The dry run removes nothing: the three doors answer the very same list. Then each door purges one
    version, its own: before each but the first, a new run of the day puts one more past retention."""
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    for _ in range(3):
        assert all(r.success for r in run_partitions(env.instance, DAYS[:1], assets=[RAW_ORDERS]))
    dry = cli_json("gc", "--older-than", "0", "--dry-run")
    assert dry == job_result(env, "backfill_gc", {"older_than_days": 0, "dry_run": True})
    assert dry == as_printed([p.as_dict() for p in service.gc(0, dry_run=True)])
    doors = [
        lambda: cli_json("gc", "--older-than", "0"),
        lambda: job_result(env, "backfill_gc", {"older_than_days": 0, "dry_run": False}),
        lambda: [p.as_dict() for p in service.gc(0)],
    ]
    versions, answers = [], []
    for door in doors:
        if answers:
            assert all(r.success for r in run_partitions(env.instance, DAYS[:1], assets=[RAW_ORDERS]))
        versions.append(env.catalog.versions_of(RAW_ORDERS, DAYS[0])[len(answers)].version_id)
        answers.append(door())
    assert [[p["version_id"] for p in a] for a in answers] == [[v] for v in versions] and dry == answers[0]
    same_record(*(a[0] for a in answers))
    assert {env.catalog.get(v).state for v in versions} == {"PURGED"}


def test_skip_and_its_undo_answer_the_same_record_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    for undo in (False, True):
        flag = ["--undo"] if undo else []
        answers = [
            cli_json("skip", RAW_ORDERS, DAYS[0], "--reason", "source outage", "--by", "ana", *flag),
            job_result(env, "backfill_skip", {"asset": RAW_ORDERS, "partition_key": DAYS[1], "reason": "source outage",
                                              "by": "ana", "undo": undo}),
            service.skip(RAW_ORDERS, "ana", "source outage", partition_key=DAYS[2], undo=undo).as_dict(),
        ]
        same_record(*answers)
        assert {a["action"] for a in answers} == {"unskip" if undo else "skip"}
        assert [[c["partition_key"] for c in a["cells"]] for a in answers] == [[day] for day in DAYS]
        assert all(c["by"] == "ana" for a in answers for c in a["cells"])


def _fixed_file(env, folder: Path, day: str) -> Path:
    """The day's serving raw_orders, saved as a person would after fixing it by hand."""
    frame = env.warehouse.read_version(env.catalog.current(RAW_ORDERS, day))
    path = folder / f"{RAW_ORDERS}-{day}.parquet"
    frame.to_parquet(path, index=False)
    return path


def test_register_answers_the_same_record_at_every_door(env, tmp_path):
    """Each door in turn registers the same fixed file as the same day: the same file against the same source, so
    the same checks; each replaces the version the door before it published (a day per door would be another
    file, with other rows, totals and check results)."""
    assert all(r.success for r in run_partitions(env.instance, DAYS[:1], assets=[RAW_ORDERS]))
    computed = env.catalog.current(RAW_ORDERS, DAYS[0]).version_id
    path = str(_fixed_file(env, tmp_path, DAYS[0]))
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    why = dict(approved_by="ana", reason="vendor re-export")
    answers = [
        cli_json("register", RAW_ORDERS, DAYS[0], "--path", path, "--approved-by", "ana", "--reason",
                 "vendor re-export"),
        job_result(env, "backfill_register", {"asset": RAW_ORDERS, "partition_key": DAYS[0], "path": path, **why}),
        service.register(RAW_ORDERS, DAYS[0], path, **why).as_dict(),
    ]
    same_record(*answers)
    assert all(a["published"] and not a["failed_checks"] and a["serving"] == a["version_id"] for a in answers)
    assert [a["taken_off"] for a in answers] == [computed, answers[0]["version_id"], answers[1]["version_id"]]
    assert answers[0]["source"] == answers[1]["source"] == as_printed(answers[2])["source"]
    # dagster_event is left out with the version it names. Only a day's first registration is recorded in Dagster
    # now: a later one's runless check evaluations collide in Dagster's unique index (asset, check, run id '',
    # partition) and it answers "not recorded (IntegrityError ...)" at every door.
    assert answers[0]["dagster_event"] == f"recorded a runless materialization of {answers[0]['version_id']}"


def _offered(env, service, days: list[str]) -> tuple[list[str], list[str]]:
    """A request of order_facts per day, and a handoff of its daily_revenue day offered to finance on each."""
    ids = [service.create(RequestInput(assets=[ORDER_FACTS], from_day=day, to_day=day, requested_by="ana",
                                       reason="contract")).request.request_id for day in days]
    return ids, _offer(env, ids, days)


def _offer(env, request_ids: list[str], days: list[str]) -> list[str]:
    return [Handoffs(env.catalog).offer(request_id, DAILY_REVENUE, "team:finance", [day], utc_now(), timedelta(days=7))
            for request_id, day in zip(request_ids, days, strict=True)]


def test_a_handoffs_accept_and_decline_answer_the_same_record_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    request_ids, handoffs = _offered(env, service, DAYS)
    answers = [
        cli_json("handoff", "accept", handoffs[0], "--by", "team:finance"),
        job_result(env, "backfill_handoff", {"handoff_id": handoffs[1], "decision": "accept", "by": "team:finance"}),
        service.accept_handoff(handoffs[2], "team:finance").as_dict(),
    ]
    same_record(*answers)
    assert [(a["handoff_id"], a["status"], a["cells_added"]) for a in answers] == [(h, "accepted", 1) for h in handoffs]
    handoffs = _offer(env, request_ids, DAYS)  # the same requests offer their day again: declined this time
    answers = [
        cli_json("handoff", "decline", handoffs[0], "--by", "team:finance"),
        job_result(env, "backfill_handoff", {"handoff_id": handoffs[1], "decision": "decline", "by": "team:finance"}),
        service.decline_handoff(handoffs[2], "team:finance").as_dict(),
    ]
    same_record(*answers)
    assert [(a["status"], a["cells_added"]) for a in answers] == [("declined", 0)] * 3
