"""Forked runs: where a run's process is (``RunWorker``, the run's ``backfill/run_worker`` tag), and the STARTING
runs that will never start, failed at once instead of after run monitoring's ``start_timeout_seconds`` (Dagster's
default 180 s), which judges a worker's health only once its run has started."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import AbstractSet

import dagster as dg

from backfill_assets.engine.model import tags as T

# How the engine event of a run sent to the default launcher starts (a run without a forked worker of ours).
FALLBACK_MESSAGE_START = "Warm run worker unavailable"


@dataclass(frozen=True)
class RunWorker:
    """Where a run's process is: ``host:pid:start_ticks`` in the run's tags."""

    host: str
    pid: int
    start_ticks: str

    def tag(self) -> str:
        return f"{self.host}:{self.pid}:{self.start_ticks}"

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> RunWorker | None:
        value = tags.get(T.RUN_WORKER)
        if not value:
            return None
        host, pid, ticks = value.rsplit(":", 2)
        return cls(host, int(pid), ticks)

    def is_local(self) -> bool:
        return self.host == socket.gethostname()

    def is_alive(self) -> bool:
        """Whether this very process (not a later one with the same pid) still runs; a zombie counts as gone."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except FileNotFoundError:
            return False
        except OSError:  # no /proc here: the pid alone must do
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            return True
        fields = stat.rsplit(")", 1)[1].split()
        return fields[0] not in ("Z", "X") and (not self.start_ticks or fields[19] == self.start_ticks)

    def exited_before_start(self) -> str | None:
        """Why a STARTING run with this worker will never start, or None while it may."""
        if self.is_local() and not self.is_alive():
            return f"Its run worker (pid {self.pid}) exited before the run started"
        return None


def fail_interrupted_launches(instance: dg.DagsterInstance, daemon_started_at: float) -> list[str]:
    """Fail the runs a crashed daemon left STARTING that cannot start: called by ``backfill-assets-daemon`` when it
    starts; ``daemon_started_at`` is its start (wall clock). Returns the run ids failed.

    A STARTING run is left so when the daemon died between dequeuing it and forking its worker (no run worker
    tag), or its forked worker died before the run started. Only a run whose launch began before this daemon
    started is judged, and a run without a worker only when the queue is the sole launcher (the run coordinator is
    queued: the webserver and the CLI enqueue, the daemon launches) and the default launcher did not take it (its
    code server owns that process)."""
    queued_only = isinstance(instance.run_coordinator, dg.QueuedRunCoordinator)

    def why(run: dg.DagsterRun) -> str | None:
        launched_at = instance.get_run_stats(run.run_id).launch_time
        if launched_at is None or launched_at >= daemon_started_at:
            return None
        run_worker = RunWorker.from_tags(run.tags)
        if run_worker is not None:
            return run_worker.exited_before_start()
        if not queued_only or _sent_to_fallback(instance, run):
            return None
        return "The daemon launching it stopped before it forked the run's worker"

    return _fail_starting(instance, why, "failed when backfill-assets-daemon started")


def fail_dead_starting_runs(
    instance: dg.DagsterInstance, forked: Mapping[str, RunWorker], cut_short: AbstractSet[str] = frozenset()
) -> list[str]:
    """Fail the STARTING runs whose forked worker is gone (it died before it could write RUN_START, e.g. its
    database restarting under it; the worker is the run's tag, or ``forked``, the launcher's own record of the fork
    when the tag could not be written), and those in ``cut_short`` (the run queue's launch of it raised, e.g. on
    that same restart) that no worker was forked for. Called by ``backfill-assets-daemon`` every few seconds."""

    def why(run: dg.DagsterRun) -> str | None:
        run_worker = RunWorker.from_tags(run.tags) or forked.get(run.run_id)
        if run_worker is not None:
            return run_worker.exited_before_start()
        if run.run_id in cut_short and not _sent_to_fallback(instance, run):
            return "Its launch failed before a run worker was forked"
        return None

    return _fail_starting(instance, why, "failed by backfill-assets-daemon")


def _fail_starting(instance: dg.DagsterInstance, why, by_whom: str) -> list[str]:
    """Fail each STARTING run ``why`` gives a reason for; returns their ids."""
    failed = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTING])):
        reason = why(record.dagster_run)
        if reason:
            instance.report_run_failed(record.dagster_run, f"{reason}: {by_whom}, not after the start timeout.")
            failed.append(record.dagster_run.run_id)
    return failed


def _sent_to_fallback(instance: dg.DagsterInstance, run: dg.DagsterRun) -> bool:
    """Whether the run went to Dagster's default launcher (its code server owns the run's process)."""
    return any(
        (event.message or "").startswith(FALLBACK_MESSAGE_START)
        for event in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ENGINE_EVENT)
    )
