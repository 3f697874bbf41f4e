"""``request cancel`` when a run's code server does not answer: bounded, total and idempotent.

Real parts only: a ``dagster api grpc`` code server in its own process, a ``dagster-daemon`` that loads the code
from it (workspace ``grpc_server``), requests made through the CLI. The run worker is held at a named boundary of
its step (``BACKFILL_HOLD``, engine/wap/faults.py) while the test acts on the run; the code server is made to not
answer by SIGSTOP — the kernel still accepts its connections, so a termination request waits, as it does on a
hung or overloaded server.

Its own daemon and home (the shared e2e daemon loads the code as a python module, with no server to stop).
Partitions: 09-05..09-06 (a cancel that crashed half-way), 09-07..09-08 (the code server stopped).
Runs are launched by Dagster's DefaultRunLauncher here (through the code server, the path that can hang); the warm
launcher's own terminate is tested in test_warm_launcher.py.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import dagster as dg
import psutil
import pytest
import yaml
from click.testing import CliRunner, Result

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.states import IN_PROGRESS, VERIFIED, VersionState
from backfill_assets.engine.store import db
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.wap.faults import AFTER_VERIFYING, ENV_HOLD
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.integration.runs.runs import IN_FLIGHT_STATUSES
from tests.orders import MODULE as CODE_LOCATION_MODULE

from .conftest import E2E, FINISHED, dagster_env, free_port, poll, prepare_home, start_daemon, stop_process, tail

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("e2e/test_cancel_unreachable")]

LOCATION = "backfill_assets"
RECANCEL_DAYS = ("2022-09-05", "2022-09-06")
STOPPED_DAYS = ("2022-09-07", "2022-09-08")
SERVER_READY_TIMEOUT = 300.0
# What the test gives the code server to answer a termination request, and what `request cancel` may take in
# all with a server that never answers: well under the 60 s of Dagster's gRPC timeout.
TERMINATE_TIMEOUT = "2"
CANCEL_BOUND_SECONDS = 20.0


@dataclass
class Stack:
    e2e: E2E
    server: subprocess.Popen
    server_log: Path
    hold: Path  # while this file exists, a step crossing AFTER_VERIFYING waits

    def stop_server(self) -> None:
        os.kill(self.server.pid, signal.SIGSTOP)

    def resume_server(self) -> None:
        if self.server.poll() is None:
            os.kill(self.server.pid, signal.SIGCONT)

    def workers(self) -> list[psutil.Process]:
        """The code server's live descendants but its multiprocessing resource tracker (which lives as long as the
        server): the run workers it launched and their step processes."""
        try:
            children = psutil.Process(self.server.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        alive = []
        for p in children:
            try:
                if p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(p.cmdline()):
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        return alive

    def release_and_drain(self) -> None:
        """The code server answers again, no step stays held, and no run is left in flight or worker alive: the
        next test starts clean (a held step keeps the source_system pool's only slot)."""
        self.resume_server()
        self.hold.unlink(missing_ok=True)
        poll(
            lambda: not self.e2e.instance.get_runs(dg.RunsFilter(statuses=IN_FLIGHT_STATUSES)) and not self.workers(),
            120,
            lambda: f"every run to finish and every run worker to exit\n{self.logs()}",
        )

    def logs(self) -> str:
        return f"code server log (tail):\n{tail(self.server_log)}\ndaemon log (tail):\n{self.e2e.log_tail()}"

    def cancel(self, request_id: str) -> tuple[Result, float]:
        self.e2e.assert_daemon_alive()
        started = time.monotonic()
        result = CliRunner().invoke(
            cli, ["request", "cancel", request_id, "--json", "--terminate-timeout", TERMINATE_TIMEOUT]
        )
        return result, time.monotonic() - started

    def start_held_request(self, days: tuple[str, str]) -> tuple[str, dg.DagsterRun, list[dg.DagsterRun]]:
        """A two-day request at --max-active 1 whose first run is STARTED and held in its step (its version
        VERIFYING) and whose second run waits in the queue behind it (queue-ahead)."""
        e = self.e2e
        self.hold.touch()
        rid = e.create(
            "--assets", RAW_ORDERS, "--from", days[0], "--to", days[1], "--max-active", "1",
            "--reprocess", "completed",
        )["request_id"]
        held = poll(
            lambda: self._held_run(rid), 120, lambda: f"the first run of {rid} to hold in its step\n{self.logs()}"
        )

        def queued_behind() -> list[dg.DagsterRun] | None:
            runs = [r.dagster_run for r in e.run_records(rid)]
            others = [r.status for r in runs if r.run_id != held.run_id]
            return runs if others == [dg.DagsterRunStatus.QUEUED] else None

        runs = poll(queued_behind, 60, lambda: f"the second run of {rid} to be queued behind the first\n{self.logs()}")
        return rid, held, runs

    def _held_run(self, request_id: str) -> dg.DagsterRun | None:
        for record in self.e2e.run_records(request_id):
            run = record.dagster_run
            if run.status == dg.DagsterRunStatus.STARTED and any(
                v.state == VersionState.VERIFYING.value for v in self.versions_of_run(run)
            ):
                return run
        return None

    def versions_of_run(self, run: dg.DagsterRun):
        return [
            v for v in self.e2e.catalog.versions_of(RAW_ORDERS, run.tags[T.DAGSTER_PARTITION])
            if v.dagster_run_id == run.run_id
        ]

    def run_status(self, run_id: str) -> dg.DagsterRunStatus:
        return self.e2e.instance.get_run_by_id(run_id).status


def _wait_until_serving(server: subprocess.Popen, port: int, log: Path) -> None:
    """The code server binds its port once the definitions are loaded."""
    deadline = time.monotonic() + SERVER_READY_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"dagster api grpc exited with {server.returncode}:\n{tail(log)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"dagster api grpc did not listen on {port} within {SERVER_READY_TIMEOUT} s:\n{tail(log)}")


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterable[Stack]:
    home = tmp_path_factory.mktemp("cancel_unreachable") / "dagster_home"
    hold = home.parent / "hold"
    port = free_port()
    with pytest.MonkeyPatch.context() as mp:
        # The code server's termination path: runs launched through it (the warm launcher's fallback path).
        prepare_home(mp, home, warm_launcher=False)
        workspace = home / "workspace.yaml"
        workspace.write_text(
            yaml.safe_dump(
                {"load_from": [{"grpc_server": {"host": "127.0.0.1", "port": port, "location_name": LOCATION}}]}
            )
        )
        # Build the instance (it creates and migrates the SQLite storage) before any other process opens it: the
        # code server and the daemon migrating it at once leave two alembic heads, and both fail to start.
        instance = dg.DagsterInstance.get()
        server_log = home / "grpc_server.log"
        with server_log.open("ab") as log:
            server = subprocess.Popen(
                [dagster_bin("dagster"), "api", "grpc", "-m", CODE_LOCATION_MODULE, "-h", "127.0.0.1", "-p", str(port)],
                stdout=log,  # a file, not a pipe: a stopped server must not block its run workers' output
                stderr=subprocess.STDOUT,
                env={**dagster_env(), ENV_HOLD: f"{AFTER_VERIFYING}={hold}"},
                cwd=str(home),
                start_new_session=True,
            )
        stack = None
        try:
            _wait_until_serving(server, port, server_log)
            daemon, daemon_log = start_daemon(instance, home, "-w", str(workspace))
            stack = Stack(E2E(home, instance, daemon, daemon_log), server, server_log, hold)
            try:
                yield stack
            finally:
                stack.resume_server()
                stop_process(daemon)
        finally:
            hold.unlink(missing_ok=True)
            if server.poll() is None:
                os.kill(server.pid, signal.SIGCONT)
            stop_process(server)  # and its session: any run worker still alive
            instance.dispose()
            db.dispose_all()


@pytest.fixture
def held(stack: Stack) -> Iterable[Stack]:
    """Whatever a test did, nothing of it is left running after it."""
    try:
        yield stack
    finally:
        stack.release_and_drain()


def test_cancel_after_a_cancel_that_crashed_half_way_finishes_the_job(held):
    stack, e = held, held.e2e
    rid, first, runs = stack.start_held_request(RECANCEL_DAYS)

    # What the old `request cancel` left when it crashed in the termination call: the request closed (no more
    # submissions), the run CANCELING (Dagster's launcher reports that before it calls the code server), and
    # the cells of both runs still `submitted`.
    Ledger(e.catalog).cancel(rid)
    e.instance.report_run_canceling(first)
    assert {c["decision"] for c in e.show(rid)["cells"]} == {"submitted"}

    result, _ = stack.cancel(rid)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["status"] == "cancelled" and out["already_cancelled"] is True, out
    # Both stopped: the queued one left the queue, the held one was terminated by its code server (or, on a
    # machine too busy for its worker to confirm within STUCK_SECONDS, marked cancelled).
    assert sorted(out["terminated_runs"] + out["forced_runs"]) == sorted(r.run_id for r in runs), out
    for run_id in out["terminated_runs"]:
        assert stack.run_status(run_id) == dg.DagsterRunStatus.CANCELED
    # The CANCELING run was asked again. Terminated: its code server told the worker, and the held step was
    # interrupted (still held otherwise) and gave its version up. Forced: nothing told the worker, whose step
    # stays held until released; its publish guard then reads the cancelled run and gives the version up.
    if first.run_id in out["forced_runs"]:
        stack.hold.unlink()
    poll(
        lambda: [v.state for v in stack.versions_of_run(first)][:1] == [VersionState.ABANDONED.value],
        30,
        lambda: f"the stopped step to abandon its version (cancel said {out})\n{stack.logs()}",
    )
    cells = e.show(rid)["cells"]
    assert [c["decision"] for c in cells] == ["cancelled", "cancelled"], cells
    assert {c["dagster_run_id"] for c in cells} == {r.run_id for r in runs}, cells

    # Once more: nothing left to do, and it still succeeds.
    again, _ = stack.cancel(rid)
    assert again.exit_code == 0, again.output
    out = json.loads(again.stdout)
    assert (out["already_cancelled"], out["terminated_runs"], out["forced_runs"]) == (True, [], []), out
    assert e.show(rid)["cells"] == cells
    assert not any(v.state == VersionState.PUBLISHED.value for v in stack.versions_of_run(first))


def test_cancel_with_a_code_server_that_does_not_answer_forces_the_run_and_returns(held):
    stack, e = held, held.e2e
    rid, first, runs = stack.start_held_request(STOPPED_DAYS)
    [queued] = [r for r in runs if r.run_id != first.run_id]

    stack.stop_server()
    result, elapsed = stack.cancel(rid)
    assert elapsed < CANCEL_BOUND_SECONDS, f"request cancel took {elapsed:.1f} s\n{result.output}"
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    out = json.loads(result.stdout)
    assert out["forced_runs"] == [first.run_id], out
    assert out["terminated_runs"] == [queued.run_id], out  # left the queue: no code server involved
    assert stack.run_status(first.run_id) == dg.DagsterRunStatus.CANCELED
    assert stack.run_status(queued.run_id) == dg.DagsterRunStatus.CANCELED
    shown = e.show(rid)
    assert shown["status"] == "cancelled"
    by_run = {c["dagster_run_id"]: c for c in shown["cells"]}
    assert by_run[first.run_id]["decision"] == "cancelled", shown["cells"]
    assert "code server" in by_run[first.run_id]["reason"], shown["cells"]
    assert by_run[queued.run_id]["decision"] == "cancelled", shown["cells"]

    # A second cancel is a no-op that succeeds (the code server is still stopped: nothing asks it anything).
    again, elapsed = stack.cancel(rid)
    assert again.exit_code == 0, again.output
    assert elapsed < CANCEL_BOUND_SECONDS
    out = json.loads(again.stdout)
    assert (out["already_cancelled"], out["terminated_runs"], out["forced_runs"]) == (True, [], []), out

    # The run worker of the forced run is still alive (only its code server was stopped). Released, it must
    # refuse to publish: its run is CANCELED.
    assert stack.workers(), "the forced run's worker should still be running"
    stack.hold.unlink()
    [version] = poll(
        lambda: [v for v in stack.versions_of_run(first) if VersionState(v.state) not in IN_PROGRESS],
        60,
        "the released step to conclude its version",
    )
    assert version.state == VersionState.ABANDONED.value, version
    assert "CANCELED" in (version.error or ""), version.error

    # The code server answers again: the worker finishes and exits; still nothing of the run is published.
    stack.resume_server()
    poll(lambda: stack.run_status(first.run_id) in FINISHED and not stack.workers(), 90, "the run worker to exit")
    assert not [v for v in stack.versions_of_run(first) if VersionState(v.state) in VERIFIED]
    assert e.catalog.current(RAW_ORDERS, STOPPED_DAYS[0]) is None
    assert e.show(rid)["cells"] == shown["cells"]

    # Dagster ends the forced run FAILURE here (its worker's job failure comes after the mark); whatever it shows,
    # reconcile reads it as a forced cancel beside Dagster's status. The run that left the queue is not forced.
    report = e.cli_json("reconcile", rid, expect_exit=1)
    runs = {r["run_id"]: r for r in report["runs"]}
    final = stack.run_status(first.run_id).value
    assert runs[first.run_id] == {"run_id": first.run_id, "status": final, "reads_as": "cancelled (forced)"}, runs
    assert runs[queued.run_id]["reads_as"] is None, runs
    cells = {c["run_ids"][-1]: c for c in report["cells"]}
    assert (cells[first.run_id]["decision"], cells[first.run_id]["run_status"]) == ("cancelled", final)
    assert cells[first.run_id]["run_reads_as"] == "cancelled (forced)" and cells[queued.run_id]["run_reads_as"] is None
    human = CliRunner().invoke(cli, ["reconcile", rid]).output
    [line] = [line for line in human.splitlines() if f" {STOPPED_DAYS[0]} " in f" {line} "]
    assert f"cancelled (forced)  [Dagster: {final}]" in line, human
