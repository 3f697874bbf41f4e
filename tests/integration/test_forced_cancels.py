"""Which runs reconcile reads as ``cancelled (forced)``: marked cancelled without their worker's confirmation, by
``request cancel`` or by Dagster's force termination, whatever status Dagster shows after (the end-to-end case, a
code server that does not answer, is in tests/e2e/test_cancel_unreachable.py)."""

from __future__ import annotations

import threading
import time

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.integration.runs.cancel import _stop_runs, force_cancel, forced_cancels
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


def test_a_run_asked_while_its_launch_was_in_progress_counts_as_stopped_once_it_ends_cancelled(tmp_path):
    """Dagster's launcher marks a run CANCELING before asking its code server, which may not know the run yet (its
    launch still in progress) and answers no. The worker then starts, sees the pending termination and ends the run
    CANCELED: the cancel stopped it, and says so (it is in the outcome's terminated runs, not left out)."""
    overrides = {**shipped_storage(), "run_launcher": {"module": "dagster", "class": "DefaultRunLauncher"}}
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=overrides) as instance:
        run = instance.create_run_for_job(one_step, tags={T.REQUEST_ID: "req-20220101-00000000"},
                                          status=dg.DagsterRunStatus.STARTING)

        def worker_sees_the_termination() -> None:
            deadline = time.monotonic() + 20
            while instance.get_run_by_id(run.run_id).status != dg.DagsterRunStatus.CANCELING:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            instance.report_run_canceled(instance.get_run_by_id(run.run_id))

        worker = threading.Thread(target=worker_sees_the_termination)
        worker.start()
        stopped = _stop_runs(instance, "req-20220101-00000000", stop_timeout=20, terminate_timeout=2)
        worker.join()
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.CANCELED
        assert stopped.ids == {run.run_id} and not stopped.forced, stopped
