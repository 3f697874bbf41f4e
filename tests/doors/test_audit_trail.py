"""The operations trail and the operations it records, on a real instance and catalog: a name ending in (or holding)
a control character is refused at every door before anything commits; a state change and its trail row commit in
one transaction (a trail row that cannot be written undoes the change); ``rollback`` is gated as ``reject`` is, at
the CLI and the Launchpad, and never restores a version whose file does not verify."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets import backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.store import schema
from backfill_assets.engine.store.handoffs import Handoffs
from backfill_assets.engine.store.operations import Operations
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.operation_jobs import op_name
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.runs import local_runs
from backfill_assets.service import Backfills, RequestInput
from tests.access_location import ADMIN, APPROVER, STRANGER
from tests.access_location import defs as ACCESS_DEFS
from tests.name_doors import cli_name_doors, with_name
from tests.orders import DEFS, run_partitions

DAY = "2022-09-02"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
# Control characters a name may end in or hold: each is refused, however str.strip() or "$" would treat it.
CONTROLS = ["\n", "\r", "\t", "\x0b", "\x0c", "\x85", "\x1b", "\u2028"]


def catalog_rows(env) -> dict[str, list]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(t)).all()), key=repr)
                for t in schema.metadata.sorted_tables}


def refused_on_one_line(result, field: str) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and field in lines[0], result.output
    return lines[0]


def published_twice(env, defs=DEFS) -> tuple[str, str]:
    """(first, second) version of daily_revenue DAY, the second serving."""
    local_runs.run_partitions(env.instance, [DAY], defs=defs, assets=PIPELINE)
    first = env.catalog.current(DAILY_REVENUE, DAY).version_id
    local_runs.run_partitions(env.instance, [DAY], defs=defs, assets=PIPELINE)
    return first, env.catalog.current(DAILY_REVENUE, DAY).version_id


def launch(defs, env, job: str, config: dict, op: str | None = None) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def(job).execute_in_process(
        run_config={"ops": {op or op_name(job): {"config": config}}}, instance=env.instance, raise_on_error=False,
        tags={"dagster/from_ui": "true"},
    )


def failure_of(result: dg.ExecuteInProcessResult) -> str:
    assert not result.success
    [failure] = [e for e in result.all_events if e.is_step_failure]
    return failure.step_failure_data.user_failure_data.description


# ---- names with a control character -----------------------------------------------------------------------------

def _with_a_request_and_a_handoff(env) -> tuple[str, str, Backfills, str, str]:
    """Two published versions of DAY, an open request and a handoff offered on it: something for every door."""
    first, serving = published_twice(env)
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    request_id = service.create(RequestInput(assets=[ORDER_FACTS], from_day="2022-09-05", to_day="2022-09-05",
                                             requested_by="tester")).request.request_id
    handoff_id = Handoffs(env.catalog).offer(request_id, DAILY_REVENUE, "team:finance", ["2022-09-05"], utc_now(),
                                             timedelta(days=7))
    return first, serving, service, request_id, handoff_id


def test_a_name_with_a_control_character_is_refused_at_every_cli_door_and_nothing_commits(env):
    first, serving, service, request_id, handoff_id = _with_a_request_and_a_handoff(env)
    # A REJECTED version to accept: reject the serving one (the first serves again).
    service.reject(DAILY_REVENUE, DAY, "tester", "for the test")
    before = catalog_rows(env)
    for args, field in cli_name_doors(DAY, serving, request_id, handoff_id):
        for control in CONTROLS:
            for name in (f"ana{control}", f"an{control}a"):
                bad = with_name(args, name)
                refused_on_one_line(CliRunner().invoke(cli, bad), field)
    assert catalog_rows(env) == before
    # ...and a resume by such a name leaves the pause alone.
    service.pause(request_id, "tester", "for the test")
    paused = catalog_rows(env)
    refused_on_one_line(CliRunner().invoke(cli, ["request", "resume", request_id, "--by", "ana\n"]), "--by")
    assert catalog_rows(env) == paused


@pytest.mark.parametrize("field", ["requested_by", "approved_by"])
def test_a_launchpad_request_by_a_name_ending_in_a_newline_is_refused_and_writes_nothing(env, field):
    before = catalog_rows(env)
    config = {"assets": [REVENUE_ALERT], "from_day": DAY, "to_day": DAY, "allow_side_effects": [REVENUE_ALERT],
              "approved_by": "cfo", "dry_run": False, field: "ana\n"}
    description = failure_of(launch(DEFS, env, REQUEST_JOB, config, REQUEST_OP))
    assert field in description and "\n" not in description.strip()
    assert catalog_rows(env) == before


# ---- one transaction for a change and its trail row ---------------------------------------------------------------

def _without_the_trail(env) -> None:
    """A throwaway catalog whose trail cannot be written: every operation's trail insert fails."""
    with env.catalog.engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE operations")


def _state(env) -> dict[str, list]:
    with env.catalog.engine.connect() as conn:
        return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(t)).all()), key=repr)
                for t in schema.metadata.sorted_tables if t.name != "operations"}


def test_a_state_change_whose_trail_row_cannot_be_written_is_rolled_back_whole(env):
    first, serving, service, request_id, handoff_id = _with_a_request_and_a_handoff(env)
    _without_the_trail(env)
    before = _state(env)
    operations = {
        "create": lambda: service.create(RequestInput(assets=[DAILY_REVENUE], from_day="2022-09-06",
                                                      to_day="2022-09-06")),
        "pause": lambda: service.pause(request_id, "tester"),
        "cancel": lambda: service.cancel(request_id),
        "rollback": lambda: service.rollback(DAILY_REVENUE, DAY, "bad", by="tester", cascade=True),
        "reject": lambda: service.reject(DAILY_REVENUE, DAY, "tester", "bad"),
        "skip": lambda: service.skip(ORDER_FACTS, "tester", "left alone", partition_key=DAY),
        "handoff": lambda: service.accept_handoff(handoff_id, "team:finance"),
        "confirm": lambda: service.confirm(request_id),
    }
    for name, operation in operations.items():
        with pytest.raises(sa.exc.DatabaseError):
            operation()
        assert _state(env) == before, f"{name} committed without its trail row"
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == serving


def test_every_state_change_leaves_exactly_its_trail_row(env):
    first, serving = published_twice(env)
    service = backfills_for_instance(DEFS, env.instance, env.catalog)
    service.rollback(DAILY_REVENUE, DAY, "bad fx", by="ana")
    service.skip(ORDER_FACTS, "ana", "left alone", partition_key=DAY)
    trail = [(o.operation, o.actor, o.target) for o in Operations(env.catalog).all()]
    assert trail == [("skip", "ana", f"{ORDER_FACTS}/{DAY}"), ("rollback", "ana", f"{DAILY_REVENUE}/{DAY}")]


# ---- rollback: gated as reject, and only to a version that verifies -----------------------------------------------

@pytest.fixture
def access_cli(env, monkeypatch):
    monkeypatch.setenv("BACKFILL_MODULE", "tests.access_location")
    return env


def test_rollback_needs_an_approver_at_the_cli_as_reject_does(access_cli):
    first, serving = published_twice(access_cli, ACCESS_DEFS)
    before = catalog_rows(access_cli)
    for by in (["--by", STRANGER], []):  # nobody named: the OS user, who is no approver either
        line = refused_on_one_line(
            CliRunner().invoke(cli, ["rollback", DAILY_REVENUE, DAY, "--reason", "bad fx", *by]), "may not approve")
        assert f"rolling back {DAILY_REVENUE} {DAY}: approvers are {APPROVER}" in line
    assert catalog_rows(access_cli) == before
    done = CliRunner().invoke(cli, ["rollback", DAILY_REVENUE, DAY, "--reason", "bad fx", "--by", ADMIN])
    assert done.exit_code == 0, done.output
    assert access_cli.catalog.current(DAILY_REVENUE, DAY).version_id == first
    [row] = Operations(access_cli.catalog).all()
    assert (row.operation, row.actor) == ("rollback", ADMIN)


def test_rollback_needs_an_approver_at_the_launchpad_as_reject_does(env):
    first, serving = published_twice(env, ACCESS_DEFS)
    before = catalog_rows(env)
    config = {"asset": DAILY_REVENUE, "partition_key": DAY, "reason": "bad fx"}
    assert f"'{STRANGER}' may not approve rolling back" in failure_of(
        launch(ACCESS_DEFS, env, "backfill_rollback", {**config, "by": STRANGER}))
    assert "'launchpad' may not approve rolling back" in failure_of(launch(ACCESS_DEFS, env, "backfill_rollback",
                                                                           config))
    assert catalog_rows(env) == before
    assert launch(ACCESS_DEFS, env, "backfill_rollback", {**config, "by": APPROVER}).success
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == first


def test_rollback_refuses_a_version_whose_file_does_not_verify_and_nothing_moves(env):
    first, serving = published_twice(env)
    Path(env.catalog.get(first).path).write_bytes(b"tampered")
    before = catalog_rows(env)
    line = refused_on_one_line(
        CliRunner().invoke(cli, ["rollback", DAILY_REVENUE, DAY, "--reason", "bad fx"]), "rollback refused")
    assert f"the version it would restore, {first}, does not verify" in line
    for to in ([], ["--to", first]):
        with pytest.raises(BackfillError, match=f"{first}, does not verify"):
            backfills_for_instance(DEFS, env.instance, env.catalog).rollback(
                DAILY_REVENUE, DAY, "bad fx", to_version=(to[1] if to else None))
    assert catalog_rows(env) == before
    assert env.catalog.current(DAILY_REVENUE, DAY).version_id == serving


def test_a_verified_rollback_target_is_restored(env):
    published_twice(env)
    run_partitions(env.instance, [DAY], assets=PIPELINE)
    change = backfills_for_instance(DEFS, env.instance, env.catalog).rollback(DAILY_REVENUE, DAY, "bad fx")
    assert change.serving != change.taken_off and env.catalog.current(DAILY_REVENUE, DAY).version_id == change.serving
