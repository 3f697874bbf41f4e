"""Attempt or new run, with real Dagster re-executions: the same code and params is another attempt of the run it
re-executes; a changed config or code version is a new logical run, attempt 1, for a single day and for a chunk."""

from __future__ import annotations

import dagster as dg
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import ENV_CODE_VERSION
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.assets.chunks import CHUNK_JOB
from backfill_assets.integration.runs.local_runs import QUIET
from tests.orders import run_chunk, run_partitions

DAY1, DAY2 = "2022-09-01", "2022-09-02"


def production_job_def() -> dg.JobDefinition:
    """Module-level, so that Dagster can reconstruct the job for a re-execution."""
    from backfill_assets.integration.jobs import PRODUCTION_JOB
    from tests.orders import DEFS as defs

    return defs.resolve_job_def(PRODUCTION_JOB)


def chunk_job_def() -> dg.JobDefinition:
    from tests.orders import DEFS as defs

    return defs.resolve_job_def(CHUNK_JOB)


def _defect(kind: str | None) -> dict:
    return {**QUIET, "ops": {ORDER_FACTS: {"config": {"defect": kind}}}}


def _reexecute(env, job_def, parent_id: str, run_config: dict, from_failure: bool = True) -> dg.DagsterRun:
    """Re-execute ``parent_id`` as the UI's "Re-execute" does (its tags carry over): from its failure, or all."""
    options = (dg.ReexecutionOptions.from_failure(parent_id, env.instance) if from_failure
               else dg.ReexecutionOptions(parent_run_id=parent_id))
    with dg.execute_job(
        dg.reconstructable(job_def),
        instance=env.instance,
        run_config=run_config,
        tags=env.instance.get_run_by_id(parent_id).tags,
        reexecution_options=options,
    ) as result:
        assert result.dagster_run.root_run_id is not None
        return result.dagster_run


def _ids(env, asset: str, day: str) -> list[tuple[str, str, int, str]]:
    return [(v.logical_run_id, v.dagster_run_id, v.attempt_no, v.state) for v in env.catalog.versions_of(asset, day)]


def test_single_day_reexecution_is_an_attempt_when_unchanged_and_a_new_run_when_its_config_changed(env):
    [first] = run_partitions(env.instance, [DAY1], assets=[RAW_ORDERS, ORDER_FACTS],
                             run_config_for={DAY1: _defect("drop_rows")})
    assert not first.success
    same = _reexecute(env, production_job_def, first.run_id, _defect("drop_rows"))
    # Same code and params: attempt 2 of the same logical run (rejected again, the defect is still there).
    assert _ids(env, ORDER_FACTS, DAY1) == [
        (first.run_id, first.run_id, 1, "REJECTED"), (first.run_id, same.run_id, 2, "REJECTED"),
    ]
    fixed = _reexecute(env, production_job_def, same.run_id, _defect(None))
    # A corrected config is a new computation: its own logical run, attempt 1 — not "attempt 3".
    assert fixed.root_run_id == first.run_id
    assert _ids(env, ORDER_FACTS, DAY1)[-1] == (fixed.run_id, fixed.run_id, 1, "PUBLISHED")
    shown = CliRunner().invoke(cli, ["versions", ORDER_FACTS, DAY1], catch_exceptions=False).output
    assert f"run {first.run_id} attempt 2 (Dagster run {same.run_id})" in shown
    assert "attempt 2 of the same computation" in shown
    assert f"run {fixed.run_id} attempt 1 (Dagster run {fixed.run_id})" in shown
    assert "a new run: params digest" in shown
    logged = [e.message for e in env.instance.all_logs(fixed.run_id) if e.message and "logical run" in e.message]
    assert any("a new run, not an attempt of run" in m and "params digest" in m for m in logged), logged


def test_a_changed_code_version_is_a_new_run_even_where_the_root_already_published(env, monkeypatch):
    monkeypatch.setenv(ENV_CODE_VERSION, "v1")
    [first] = run_partitions(env.instance, [DAY1], assets=[RAW_ORDERS])
    monkeypatch.setenv(ENV_CODE_VERSION, "v2")
    with dg.execute_job(
        dg.reconstructable(production_job_def), instance=env.instance, run_config=QUIET,
        tags=env.instance.get_run_by_id(first.run_id).tags,
        reexecution_options=dg.ReexecutionOptions(parent_run_id=first.run_id),
    ) as again:
        assert again.success
    # Not the root's publish reported again: new code computed and published a version of its own run.
    assert _ids(env, RAW_ORDERS, DAY1) == [
        (first.run_id, first.run_id, 1, "SUPERSEDED"), (again.run_id, again.run_id, 1, "PUBLISHED"),
    ]
    assert env.catalog.current(RAW_ORDERS, DAY1).code_version == "v2"
    # Dagster copied the parent's tags: a run of no request is stamped again with the code it computed under
    # (only a request's runs freeze theirs: tests/integration/test_run_tags.py).
    assert [env.instance.get_run_by_id(r.run_id).tags[T.CODE_VERSION] for r in (first, again)] == ["v1", "v2"]


def test_chunk_reexecution_keeps_unchanged_assets_in_the_root_run_and_starts_a_run_for_a_changed_one(env):
    days = {RAW_ORDERS: [DAY1, DAY2], ORDER_FACTS: [DAY1, DAY2]}
    first = run_chunk(env.instance, days, configs={ORDER_FACTS: {"defect": "drop_rows"}})
    assert not first.success
    config = env.instance.get_run_by_id(first.run_id).run_config
    # Every op again (a chunk's ops complete; only its verdict fails): the same computation is the same run, whose
    # days an earlier attempt already concluded, so nothing is written again.
    same = _reexecute(env, chunk_job_def, first.run_id, config, from_failure=False)
    assert same.status == dg.DagsterRunStatus.FAILURE
    assert _ids(env, ORDER_FACTS, DAY1) == [(first.run_id, first.run_id, 1, "REJECTED")]
    fixed_op = {"config": {"partitions": [DAY1, DAY2]}}  # the defect left out
    fixed_config = {**config, "ops": {**config["ops"], f"chunk_{ORDER_FACTS}": fixed_op}}
    fixed = _reexecute(env, chunk_job_def, same.run_id, fixed_config, from_failure=False)
    assert fixed.status == dg.DagsterRunStatus.SUCCESS  # the verdict found every day under the right run
    for day in (DAY1, DAY2):
        assert _ids(env, ORDER_FACTS, day)[-1] == (fixed.run_id, fixed.run_id, 1, "PUBLISHED")
        # raw_orders did not change: still the root run's single attempt, not recomputed.
        assert _ids(env, RAW_ORDERS, day) == [(first.run_id, first.run_id, 1, "PUBLISHED")]
