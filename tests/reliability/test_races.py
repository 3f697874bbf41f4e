"""Races: two processes released by one barrier.

1. Two requests over overlapping partitions created at the same instant (through the CLI, and through
   Ledger.create for the tightest window), on SQLite and PostgreSQL: exactly one holds every partition, the
   other is refused naming the holder and leaves no row behind.
2. A production-lane run and a backfill-lane run of the same partition — real Dagster runs in two processes,
   held right before ``catalog.publish`` and released together: exactly one compare-and-swap wins, the loser's
   version is REJECTED with "lost the publish race to <winner>", its run fails saying so, and reconcile shows it.
"""

from __future__ import annotations

import json
import queue

import pytest
import sqlalchemy as sa

from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_tags_for
from tests.driver_harness import drive
from tests.orders import GRAPH, run_partitions

from . import children, mode
from .invariants import assert_catalog_consistent, assert_readers_see

BACKENDS = ("sqlite", "postgres")
A_DAYS = ("2022-09-03", "2022-09-06")
B_DAYS = ("2022-09-05", "2022-09-08")  # overlaps A on 09-05 and 09-06
OVERLAP = ("2022-09-05", "2022-09-06")
RACE_DAY = "2022-09-10"


def run_pair(forkserver, target, args_a: tuple, args_b: tuple, timeout: float = 120) -> dict:
    barrier = forkserver.Barrier(2)
    results = forkserver.Queue()
    procs = [forkserver.Process(target=target, args=(*args, barrier, results)) for args in (args_a, args_b)]
    for p in procs:
        p.start()
    out = {}
    try:
        for _ in procs:
            who, result = results.get(timeout=timeout)
            out[who] = result
    except queue.Empty:
        pytest.fail(f"a racer did not report within {timeout} s: {out}")
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join()
    return out


@pytest.fixture(scope="module")
def race_envs(module_envs):
    built = {}
    for backend in BACKENDS:
        env = module_envs(f"race-{backend}", backend=backend)
        runs = run_partitions(env.instance, [RACE_DAY], assets=[RAW_ORDERS, ORDER_FACTS])
        assert all(r.success for r in runs), runs
        built[backend] = env
    return built


def request_rows(env) -> dict[str, set]:
    with env.catalog.engine.connect() as conn:
        return {
            t.name: set(conn.execute(sa.select(t.c.request_id).distinct()).scalars())
            for t in (schema.requests, schema.request_items, schema.claims)
        }


def overlapping_creates_once(env, forkserver, how: str) -> str:
    env.activate()
    env.close_open_requests()
    before = request_rows(env)
    args = [
        {"assets": ORDER_FACTS, "first": first, "last": last, "who": who}
        for who, (first, last) in (("racer-a", A_DAYS), ("racer-b", B_DAYS))
    ]
    out = run_pair(forkserver, children.race_create, (env.variables, how, args[0]), (env.variables, how, args[1]))
    for who, result in out.items():
        assert result["exception"] is None, f"{who} crashed: {result['exception']}"
    winners = [w for w, r in out.items() if r["exit"] == 0]
    losers = [w for w, r in out.items() if r["exit"] != 0]
    assert len(winners) == 1 and len(losers) == 1, {w: (r["exit"], r.get("stderr")) for w, r in out.items()}
    winner, loser = out[winners[0]], out[losers[0]]
    winner_id = json.loads(winner["stdout"])["request_id"] if how == "cli" else winner["request_id"]

    # The loser: exit 2 and one line naming the holder and the overlapping cells.
    lines = [line for line in loser["stderr"].splitlines() if line.strip()]
    assert loser["exit"] == 2 and len(lines) == 1 and lines[0].startswith("error: overlaps an open request"), lines
    assert winner_id in lines[0] and all(f"{ORDER_FACTS} {day}" in lines[0] for day in OVERLAP), lines[0]

    # Exactly one holder per partition; nothing of the loser was written.
    after = request_rows(env)
    for table, ids in after.items():
        assert ids - before[table] == {winner_id}, f"{table}: new request ids {ids - before[table]}"
    with env.catalog.engine.connect() as conn:
        claims = conn.execute(sa.select(schema.claims)).all()
    held = {(c.asset, c.partition_key): c.request_id for c in claims}
    assert len(held) == len(claims)
    won_days = A_DAYS if winners[0] == "racer-a" else B_DAYS
    for day in [f"2022-09-{d:02d}" for d in range(int(won_days[0][-2:]), int(won_days[1][-2:]) + 1)]:
        assert held.get((ORDER_FACTS, day)) == winner_id, f"{day} is held by {held.get((ORDER_FACTS, day))}"
    # Release the partitions for the next trial.
    Ledger(env.catalog).cancel(winner_id)
    return winners[0]


# The budget counts every trial the test makes: TRIALS per backend and per door.
@pytest.mark.timeout(mode.timeout(per_trial_seconds=20, trials=mode.TRIALS * len(BACKENDS) * 2))
def test_overlapping_requests_created_at_the_same_instant_have_exactly_one_holder(race_envs, forkserver, trials):
    with trials("race.overlapping_requests") as klass:
        for backend in BACKENDS:
            for how in ("cli", "ledger"):
                for i in range(mode.TRIALS):
                    with klass.trial(f"{i} ({backend}, {how})"):
                        overlapping_creates_once(race_envs[backend], forkserver, how)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


def publish_race_once(env, forkserver) -> str:
    env.activate()
    env.close_open_requests()
    catalog = env.catalog
    previous = catalog.current(ORDER_FACTS, RACE_DAY)
    log_before = catalog.log_after(0)
    request_id = env.cli_json("request", "create", "--assets", ORDER_FACTS, "--from", RACE_DAY, "--to", RACE_DAY,
                              "--reprocess", "completed", "--requested-by", "reliability")["request_id"]
    record = Ledger(catalog).get(request_id)
    [submission] = drive_request(GRAPH, env.instance, catalog, record, code_version())
    backfill_tags = {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}
    out = run_pair(
        forkserver, children.race_publish,
        (env.variables, RACE_DAY, ORDER_FACTS, {}, "production"),
        (env.variables, RACE_DAY, ORDER_FACTS, backfill_tags, "backfill"),
    )
    assert all(r["run_id"] for r in out.values()), out
    won = [lane for lane, r in out.items() if r["success"]]
    assert len(won) == 1, f"exactly one run must publish: {out}"
    [lost] = [lane for lane in out if lane not in won]

    run_ids = {r["run_id"] for r in out.values()}
    new = [v for v in catalog.versions_of(ORDER_FACTS, RACE_DAY) if v.dagster_run_id in run_ids]
    assert len(new) == 2, [v.version_id for v in new]
    by_lane = {v.lane: v for v in new}
    winner, loser = by_lane[won[0]], by_lane[lost]
    expected = previous.version_id if previous else None
    assert winner.expected_previous_version_id == loser.expected_previous_version_id == expected, "not one race"
    assert winner.state == "PUBLISHED" and loser.state == "REJECTED", (winner.state, loser.state)
    message = f"lost the publish race to {winner.version_id}"
    assert message in (loser.error or ""), loser.error
    assert message in (out[lost]["failure"] or ""), f"the losing run's error: {out[lost]['failure']}"
    assert catalog.log_after(log_before[-1]["seq"] if log_before else 0) == [
        row for row in catalog.log_after(0) if row["version_id"] == winner.version_id
    ], "exactly one publish_log row for the race"
    assert_readers_see(env, ORDER_FACTS, RACE_DAY, {winner.version_id})

    drive(env, request_id)  # settles the cell from its run and closes the request
    report = env.cli_json("reconcile", request_id, expect=(0, 1))
    [cell] = report["cells"]
    [shown] = cell["versions"]
    assert shown["version_id"] == by_lane["backfill"].version_id
    if lost == "backfill":
        assert cell["decision"] == "rejected" and shown["state"] == "REJECTED" and message in shown["error"], cell
        assert report["complete"] is False
    else:
        assert cell["decision"] == "published" and shown["state"] == "PUBLISHED" and report["complete"], cell
        listed = {v["version_id"]: v for v in env.cli_json("versions", ORDER_FACTS, RACE_DAY)}
        assert listed[loser.version_id]["state"] == "REJECTED" and message in listed[loser.version_id]["error"]
    assert_catalog_consistent(catalog)
    return lost


# TRIALS per backend: a budget of TRIALS alone timed out the six trials on a loaded machine.
@pytest.mark.timeout(mode.timeout(per_trial_seconds=30, trials=mode.TRIALS * len(BACKENDS)))
def test_two_runs_publishing_one_partition_at_once_have_exactly_one_winner(race_envs, forkserver, trials):
    with trials("race.concurrent_publish") as klass:
        losers: dict[str, int] = {}
        for backend in BACKENDS:
            for i in range(mode.TRIALS):
                with klass.trial(f"{i} ({backend})"):
                    lost = publish_race_once(race_envs[backend], forkserver)
                    losers[lost] = losers.get(lost, 0) + 1
        klass.note("losers: " + ", ".join(f"{lane} lane {n}x" for lane, n in sorted(losers.items())))
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"
