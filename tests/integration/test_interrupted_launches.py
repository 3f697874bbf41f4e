"""Runs between launch and start: those a crashed daemon left STARTING are failed when ``backfill-assets-daemon``
starts again, not after run monitoring's start timeout, and runs that may still start are left alone; a terminate
of a just-forked run waits for its start, so its cancel is not lost. On a real instance configured as the shipped
dagster.yaml (the queued coordinator, the warm launcher)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid

import dagster as dg
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.integration.runs.warm_launcher import FALLBACK_MESSAGE_START, RunWorker, WarmRunLauncher
from backfill_assets.integration.runs.warm_worker import start_ticks
from tests.homes import shipped_storage

JOB = "backfill_partition"
QUEUED = {"module": "backfill_assets.integration.runs.coordinator", "class": "BackfillRunCoordinator"}
DEFAULT = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
WARM = {"module": "backfill_assets.integration.runs.warm_launcher", "class": "WarmRunLauncher"}


def instance_with(coordinator: dict, tmp_path):
    return dg.instance_for_test(
        temp_dir=str(tmp_path), overrides={**shipped_storage(), "run_coordinator": coordinator, "run_launcher": WARM}
    )


def starting_run(instance: dg.DagsterInstance, tags: dict[str, str] | None = None) -> dg.DagsterRun:
    """A run as the queue leaves it when it begins to launch it: STARTING, with its launch time."""
    run = dg.DagsterRun(job_name=JOB, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.NOT_STARTED, tags=tags or {})
    instance.add_run(run)
    instance.report_dagster_event(
        dg.DagsterEvent(event_type_value=dg.DagsterEventType.PIPELINE_STARTING.value, job_name=JOB), run.run_id
    )
    assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.STARTING
    return run


def status(instance: dg.DagsterInstance, run: dg.DagsterRun) -> dg.DagsterRunStatus:
    return instance.get_run_by_id(run.run_id).status


@pytest.fixture
def dead_pid() -> RunWorker:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    ticks = start_ticks(child.pid)
    child.wait()
    return RunWorker(socket.gethostname(), child.pid, ticks)


def test_runs_left_starting_by_a_crashed_daemon_fail_at_once_and_the_others_are_left_alone(tmp_path, dead_pid):
    with instance_with(QUEUED, tmp_path) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, WarmRunLauncher)
        cut_off = starting_run(instance)  # dequeued, never forked
        worker_died = starting_run(instance, {T.RUN_WORKER: dead_pid.tag()})
        me = RunWorker(socket.gethostname(), os.getpid(), start_ticks(os.getpid()))
        worker_alive = starting_run(instance, {T.RUN_WORKER: me.tag()})  # forked, still importing
        elsewhere = starting_run(instance, {T.RUN_WORKER: RunWorker("another-host", 1, "1").tag()})
        fallback = starting_run(instance)  # its code server owns the process
        instance.report_engine_event(f"{FALLBACK_MESSAGE_START} (warm worker did not answer)", fallback)
        started_at = time.time()
        after_start = starting_run(instance)  # launched by the daemon that just started

        assert sorted(launcher.fail_interrupted_launches(started_at)) == sorted([cut_off.run_id, worker_died.run_id])

        assert status(instance, cut_off) == dg.DagsterRunStatus.FAILURE
        assert status(instance, worker_died) == dg.DagsterRunStatus.FAILURE
        for run in (worker_alive, elsewhere, fallback, after_start):
            assert status(instance, run) == dg.DagsterRunStatus.STARTING, run.tags
        [failure] = instance.all_logs(cut_off.run_id, of_type=dg.DagsterEventType.PIPELINE_FAILURE)
        assert "daemon launching it stopped" in failure.message and "not after the start timeout" in failure.message
        [failure] = instance.all_logs(worker_died.run_id, of_type=dg.DagsterEventType.PIPELINE_FAILURE)
        assert f"run worker (pid {dead_pid.pid}) exited before the run started" in failure.message
        # Once is enough: the failed runs are finished, the rest still may start.
        assert launcher.fail_interrupted_launches(started_at) == []


def test_without_the_queue_a_run_with_no_worker_may_be_launched_by_another_process_and_is_left_alone(tmp_path):
    # With Dagster's default coordinator the webserver and the CLI launch runs themselves: a STARTING run with no
    # worker yet may be one of theirs, waiting for its warm worker.
    with instance_with(DEFAULT, tmp_path) as instance:
        run = starting_run(instance)
        assert instance.run_launcher.fail_interrupted_launches(time.time()) == []
        assert status(instance, run) == dg.DagsterRunStatus.STARTING


def test_terminate_waits_for_a_just_forked_run_to_start_so_its_cancel_is_not_lost(tmp_path):
    # RUN_START sets a run STARTED whatever its status: a CANCELING written before it would be lost, and the
    # interrupt that follows would end the run FAILURE. The launcher sends the termination once the run started.
    worker = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, lambda *_: None); time.sleep(60)"]
    )
    try:
        with instance_with(QUEUED, tmp_path) as instance:
            me = RunWorker(socket.gethostname(), worker.pid, start_ticks(worker.pid))
            run = starting_run(instance, {T.RUN_WORKER: me.tag()})
            answered: list[bool] = []
            terminating = threading.Thread(target=lambda: answered.append(instance.run_launcher.terminate(run.run_id)))
            terminating.start()
            time.sleep(0.5)
            assert status(instance, run) == dg.DagsterRunStatus.STARTING  # nothing written before the run starts
            instance.report_dagster_event(
                dg.DagsterEvent(event_type_value=dg.DagsterEventType.RUN_START.value, job_name=JOB), run.run_id
            )
            terminating.join(10)
            assert answered == [True]
            kinds = [e.dagster_event.event_type_value for e in instance.all_logs(run.run_id) if e.dagster_event]
            assert kinds.index("PIPELINE_CANCELING") > kinds.index("PIPELINE_START"), kinds
            assert status(instance, run) == dg.DagsterRunStatus.CANCELING
    finally:
        worker.kill()
        worker.wait()


def test_a_run_whose_forked_worker_died_before_it_started_is_failed_while_the_daemon_runs(tmp_path, dead_pid):
    # The database restarting under a just-forked run: its worker dies before RUN_START, and the run's tag may not
    # have been written either (the same outage). The launcher remembers what it forked.
    with instance_with(QUEUED, tmp_path) as instance:
        launcher = instance.run_launcher
        tagged = starting_run(instance, {T.RUN_WORKER: dead_pid.tag()})
        untagged = starting_run(instance)
        launcher._forked[untagged.run_id] = dead_pid  # what _fork records before the tag is written
        me = RunWorker(socket.gethostname(), os.getpid(), start_ticks(os.getpid()))
        alive = starting_run(instance, {T.RUN_WORKER: me.tag()})
        not_forked = starting_run(instance)  # being launched (or by another process): not this check's to judge

        assert sorted(launcher.fail_dead_starting_runs()) == sorted([tagged.run_id, untagged.run_id])
        assert status(instance, tagged) == status(instance, untagged) == dg.DagsterRunStatus.FAILURE
        assert status(instance, alive) == status(instance, not_forked) == dg.DagsterRunStatus.STARTING
        [failure] = instance.all_logs(untagged.run_id, of_type=dg.DagsterEventType.PIPELINE_FAILURE)
        assert f"run worker (pid {dead_pid.pid}) exited before the run started" in failure.message


def test_a_run_whose_launch_raised_before_any_fork_is_failed_while_the_daemon_runs(tmp_path):
    # The run queue wrote STARTING, then its storage went away before the launcher was called (or while it was):
    # the daemon's queue loop records the run as cut short, and no worker was ever forked for it.
    with instance_with(QUEUED, tmp_path) as instance:
        launcher = instance.run_launcher
        cut_short = starting_run(instance)
        fallback = starting_run(instance)  # cut short too, but on Dagster's default launcher: its code server's
        instance.report_engine_event(f"{FALLBACK_MESSAGE_START} (warm worker did not answer)", fallback)
        other = starting_run(instance)  # not cut short: being launched

        assert launcher.fail_dead_starting_runs({cut_short.run_id, fallback.run_id}) == [cut_short.run_id]
        assert status(instance, cut_short) == dg.DagsterRunStatus.FAILURE
        assert status(instance, fallback) == status(instance, other) == dg.DagsterRunStatus.STARTING
        [failure] = instance.all_logs(cut_short.run_id, of_type=dg.DagsterEventType.PIPELINE_FAILURE)
        assert "launch failed before a run worker was forked" in failure.message
