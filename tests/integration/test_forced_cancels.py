"""Which runs reconcile reads as ``cancelled (forced)``: marked cancelled without their worker's confirmation, by
``request cancel`` or by Dagster's force termination, whatever status Dagster shows after (the end-to-end case, a
code server that does not answer, is in tests/e2e/test_cancel_unreachable.py)."""

from __future__ import annotations

import dagster as dg

from backfill_assets.integration.runs.cancel import force_cancel, forced_cancels
from tests.homes import shipped_storage

# What dagster-graphql's force termination writes (``_force_mark_as_canceled``).
UI_FORCE_MESSAGE = (
    "This pipeline was forcibly marked as canceled from outside the execution context. The computational resources "
    "created by the run may not have been fully cleaned up."
)


@dg.op
def noop() -> None:
    pass


@dg.job
def one_step():
    noop()


def test_only_runs_marked_cancelled_without_their_worker_read_as_forced(tmp_path):
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=shipped_storage()) as instance:
        runs = {name: instance.create_run_for_job(one_step) for name in (
            "ours", "ours_then_failed", "ui", "from_the_queue", "failed")}
        force_cancel(instance, runs["ours"].run_id, "its code server did not answer the termination request within 5 s")
        force_cancel(instance, runs["ours_then_failed"].run_id, "it was still CANCELING after 10 s")
        # Its worker, still running, ends the job afterwards: Dagster then shows FAILURE.
        instance.report_run_failed(instance.get_run_by_id(runs["ours_then_failed"].run_id))
        instance.report_run_canceled(runs["ui"], message=UI_FORCE_MESSAGE)
        # Confirmed: the queue takes a queued run out (no worker to confirm); a failure with no cancel at all.
        instance.report_run_canceled(runs["from_the_queue"], message="Canceling run from the queue.")
        instance.report_run_failed(runs["failed"])
        assert one_step.execute_in_process(instance=instance).success  # a run that succeeded
        status = {name: instance.get_run_by_id(run.run_id).status for name, run in runs.items()}
        assert status["ours_then_failed"] == dg.DagsterRunStatus.FAILURE, status

        finished = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.CANCELED,
                                                             dg.DagsterRunStatus.FAILURE,
                                                             dg.DagsterRunStatus.SUCCESS]))
        forced = forced_cancels(instance, finished)
        assert forced == {runs[n].run_id for n in ("ours", "ours_then_failed", "ui")}, (forced, status)
