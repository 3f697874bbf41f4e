"""A real ``dagster-daemon`` we can SIGKILL and restart, and what a request's runs must look like afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import yaml

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import PACKAGE_DIR
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema import versions
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from tests.e2e.conftest import stop_process, tail
from tests.orders import MODULE as CODE_LOCATION_MODULE

from .invariants import assert_catalog_consistent

READY_TIMEOUT = 300.0
WANTED_DAEMONS = {"SENSOR", "QUEUED_RUN_COORDINATOR"}


@dataclass
class Daemon:
    home: Path
    instance: dg.DagsterInstance
    log: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def proc(self) -> subprocess.Popen:
        return self.procs[-1]

    def start(self) -> None:
        started = time.time()
        with self.log.open("ab") as log:
            self.procs.append(subprocess.Popen(
                [dagster_bin("backfill-assets-daemon"), "run", "-m", CODE_LOCATION_MODULE],
                stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ), cwd=str(self.home),
                start_new_session=True,
            ))
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"dagster-daemon exited with {self.proc.returncode}:\n{tail(self.log)}")
            beats = self.instance.get_daemon_heartbeats()
            if all(name in beats and beats[name].timestamp > started for name in WANTED_DAEMONS):
                return
            time.sleep(0.2)
        raise RuntimeError(f"dagster-daemon sent no fresh heartbeat within {READY_TIMEOUT} s:\n{tail(self.log)}")

    def kill(self) -> None:
        """SIGKILL the daemon process itself (its code server and run workers are left as a crash leaves them)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def alive(self) -> bool:
        return bool(self.procs) and self.proc.poll() is None

    def stop_all(self) -> None:
        for proc in self.procs:
            stop_process(proc)  # SIGTERM, then SIGKILL to its own session: code server and run workers


def instance_yaml(postgres: bool) -> str:
    """The repository's dagster.yaml (SQLite) or deploy/postgres/dagster.yaml, as a test's DAGSTER_HOME gets it."""
    source = PACKAGE_DIR.parent / ("deploy/postgres/dagster.yaml" if postgres else "dagster.yaml")
    config = yaml.safe_load(source.read_text())
    return yaml.safe_dump(config, sort_keys=False)


def request_runs(instance: dg.DagsterInstance, request_id: str) -> list[dg.DagsterRun]:
    return list(instance.get_runs(filters=dg.RunsFilter(tags={T.REQUEST_ID: request_id})))


def wait_until_closed(catalog, request_id: str, daemon: Daemon, timeout: float) -> str:
    ledger = Ledger(catalog)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = ledger.get(request_id).status
        if status in (*M.CLOSED_STATUSES, M.BLOCKED):
            return status
        assert daemon.alive(), f"dagster-daemon died: {daemon.proc.returncode}\n{tail(daemon.log)}"
        time.sleep(0.5)
    counts = ledger.counts(request_id)
    raise AssertionError(f"{request_id} still {ledger.get(request_id).status} after {timeout} s: {counts}")


def assert_each_cell_ran_once_and_published(env, request_id: str) -> list[str]:
    """No interval submitted twice, no cell lost, nothing published twice.

    Every cell is published, by the one run under its own run key — or, by design, by a resubmission under the
    next round's key after a run that failed before writing anything. The run that published may itself have
    ended FAILURE after its publish (its storage went away before the run finished): the version is what
    counts. ``reconcile --repair`` must leave no gap (it may abandon attempts a fault left mid-write, or record
    a lost materialization), and no cell may have two published versions. Returns notes on what it saw.
    """
    ledger = Ledger(env.catalog)
    record = ledger.get(request_id)
    cells = ledger.cells(request_id)
    explain = lambda: explain_runs(env.instance, request_id)  # noqa: E731
    assert record.status == M.COMPLETED, f"{request_id} is {record.status}: {record.row['message']}"
    lost = [(c.partition_key, c.decision, c.reason) for c in cells if c.decision != M.PUBLISHED]
    assert not lost, f"cells not published: {lost}\n{explain()}"
    keys = [c.run_key for c in cells]
    assert len(set(keys)) == len(keys) and all(keys), f"run keys are not distinct per cell: {keys}"
    runs = request_runs(env.instance, request_id)
    by_key: dict[str, list[dg.DagsterRun]] = {}
    for run in runs:
        by_key.setdefault(run.tags.get(RUN_KEY_TAG), []).append(run)
    twice = {k: [r.run_id for r in rs] for k, rs in by_key.items() if len(rs) > 1}
    assert not twice, f"a run key was launched twice: {twice}\n{explain()}"
    own = env.catalog.versions_where(versions.c.request_id == request_id)
    writers = {v.dagster_run_id for v in own}
    published_by = {v.dagster_run_id for v in own if v.published_at}
    notes = []
    per_partition = Counter(r.tags.get(T.DAGSTER_PARTITION) for r in runs)
    for cell in cells:
        [run] = by_key.get(cell.run_key, [None])
        assert run is not None, f"{cell.partition_key}: no run for its key {cell.run_key}"
        assert run.tags[T.DAGSTER_PARTITION] == cell.partition_key and cell.dagster_run_id == run.run_id
        if run.status != dg.DagsterRunStatus.SUCCESS:
            assert run.status == dg.DagsterRunStatus.FAILURE and run.run_id in published_by, (
                f"{cell.partition_key}: run {run.run_id} {run.status.value} did not publish\n{explain()}"
            )
            notes.append(f"a run failed after publishing ({failure_reason(env.instance, run)})")
        earlier = [r for r in runs if r.tags.get(T.DAGSTER_PARTITION) == cell.partition_key and r is not run]
        for r in earlier:  # only a resubmission after a run that failed before writing anything
            assert r.status == dg.DagsterRunStatus.FAILURE and r.run_id not in writers, (
                f"{cell.partition_key} ran twice: {r.run_id} {r.status.value} wrote={r.run_id in writers}"
            )
            assert r.tags[RUN_KEY_TAG].rsplit("/", 1)[0] == cell.run_key.rsplit("/", 1)[0]
            notes.append("a run that failed before writing was resubmitted (next round's run key)")
        assert per_partition[cell.partition_key] == len(earlier) + 1
    assert_catalog_consistent(env.catalog)
    report = env.cli_json("reconcile", request_id, "--repair", expect=(0, 1))
    t = report["totals"]
    versions_seen = [(v["version_id"].split("/", 2)[1], v["attempt_no"], v["state"], v["gap"])
                     for c in report["cells"] for v in c["versions"]]
    assert report["complete"] and t["duplicate_publishes"] == 0 and t["gaps"] == 0, (
        f"reconcile: {t}\n{explain_writers(env.instance, own)}\ngaps: {report['gaps']}\n"
        f"versions: {versions_seen}\n{explain()}"
    )
    for action in report["repaired"]:
        notes.append(f"reconcile --repair: {action['action']} (an attempt the fault interrupted)")
    return notes


def explain_writers(instance: dg.DagsterInstance, own: list) -> str:
    """Each version of the request with the Dagster run that wrote it, that run's status and every tag: a run
    Dagster created without its tags (a storage restart mid-insert) is invisible to the run-key lookups."""
    lines = []
    for v in own:
        run = instance.get_run_by_id(v.dagster_run_id)
        shown = "no such run" if run is None else f"{run.status.value} tags={dict(run.tags)}"
        lines.append(f"  {v.version_id} {v.state} <- {v.dagster_run_id[:8]} {shown}")
    return "writers:\n" + "\n".join(lines)


def failure_reason(instance: dg.DagsterInstance, run: dg.DagsterRun) -> str:
    return f"dagster/failure_reason={run.tags.get('dagster/failure_reason', 'none')}"


def explain_runs(instance: dg.DagsterInstance, request_id: str) -> str:
    """Every run of the request with its status, failure reason and engine/failure messages (for a failure)."""
    lines = []
    for run in sorted(request_runs(instance, request_id), key=lambda r: r.tags.get(T.DAGSTER_PARTITION, "")):
        tags = {k: v for k, v in run.tags.items() if k.startswith("dagster/") and "priority" not in k}
        lines.append(f"  {run.tags.get(T.DAGSTER_PARTITION)} {run.run_id[:8]} {run.status.value} {tags}")
        if run.status != dg.DagsterRunStatus.SUCCESS:
            for record in instance.all_logs(run.run_id):
                event = record.dagster_event
                if event and (event.is_failure or event.event_type_value in ("ENGINE_EVENT", "RUN_FAILURE")):
                    lines.append(f"      {event.event_type_value}: {(record.message or '')[:300]}")
    return "\n".join(lines)
