"""One answer per operation: the CLI's ``--json``, the Launchpad job's ``result`` and the Python call's record are
one serialization (the record's ``as_dict()``), for the operations whose CLI once printed a shape of its own."""

from __future__ import annotations

import json

from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.service import RequestInput
from tests.orders import DEFS, run_partitions

from .test_operation_jobs import launch, result_of

DAYS = ["2022-09-02", "2022-09-03", "2022-09-04"]
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
# Values that differ by door or by day; every key and every other value is the same record's.
PER_CALL = {"asset", "partition_key", "taken_off", "serving", "seq", "consumers", "override", "dagster_event",
            "tables", "request_id", "requested_at", "confirmed_at", "partitions", "message"}


def _cli(*args: str) -> object:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _same_record(*answers: dict) -> None:
    shapes = [{k: (None if k in PER_CALL else v) for k, v in answer.items()} for answer in answers]
    differing = {k for shape in shapes for k in shapes[0].keys() | shape.keys() if shape.get(k) != shapes[0].get(k)}
    assert not differing, {k: [shape.get(k) for shape in shapes] for k in differing}


def test_rollback_and_reject_answer_the_same_record_at_every_door(env):
    for _ in range(3):  # three versions a day: a rollback and a reject each still have one to restore
        assert all(r.success for r in run_partitions(env.instance, DAYS, assets=PIPELINE))
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    rollback = dict(asset=ORDER_FACTS, reason="bad fx", by="ana")
    answers = [
        _cli("rollback", ORDER_FACTS, DAYS[0], "--reason", "bad fx", "--by", "ana"),
        result_of(launch(env, "backfill_rollback", {"partition_key": DAYS[1], **rollback}), "backfill_rollback")[1],
        service.rollback(partition_key=DAYS[2], **rollback).as_dict(),
    ]
    _same_record(*answers)
    assert {a["action"] for a in answers} == {"rollback"} and all(a["taken_off"] and a["serving"] for a in answers)
    reject = dict(asset=ORDER_FACTS, reason="still bad")
    answers = [
        _cli("reject", ORDER_FACTS, DAYS[0], "--reason", "still bad", "--by", "ana"),
        result_of(launch(env, "backfill_reject", {"partition_key": DAYS[1], "by": "ana", **reject}),
                  "backfill_reject")[1],
        service.reject(partition_key=DAYS[2], by="ana", **reject).as_dict(),
    ]
    _same_record(*answers)
    assert {a["action"] for a in answers} == {"reject"}


def test_confirm_and_gc_answer_the_same_record_at_every_door(env):
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    ids = [service.create(RequestInput(assets=[ORDER_FACTS], from_day=day, to_day=day, downstream="cascade",
                                       confirm_cascade=True, reason="contract")).request.request_id for day in DAYS]
    answers = [
        _cli("request", "confirm", ids[0]),
        result_of(launch(env, "backfill_confirm", {"request_id": ids[1]}), "backfill_confirm")[1],
        service.confirm(ids[2]).as_dict(),
    ]
    _same_record(*answers)
    assert [a["request_id"] for a in answers] == ids and all(a["confirmed_at"] for a in answers)
    # gc's dry run removes nothing: the three doors answer the very same list.
    assert all(r.success for r in run_partitions(env.instance, DAYS[:1], assets=[RAW_ORDERS]) * 2)
    gc_cli = _cli("gc", "--older-than", "0", "--dry-run")
    gc_job = result_of(launch(env, "backfill_gc", {"older_than_days": 0, "dry_run": True}), "backfill_gc")[1]
    assert gc_cli == gc_job == [p.as_dict() for p in service.gc(0, dry_run=True)]
