"""The processes the end-to-end tests start and wait on: daemons, a webserver, and the waiting itself."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import dagster as dg
import pytest

from backfill_assets.cli.daemon import dagster_bin
from tests.orders import MODULE as CODE_LOCATION_MODULE

DAEMON_READY_TIMEOUT = 300.0
WEBSERVER_READY_TIMEOUT = 300.0
LOG_TAIL_LINES = 60


def poll(predicate: Callable[[], Any], timeout: float, what: str | Callable[[], str], interval: float = 0.2) -> Any:
    """The predicate's first truthy value, or a test failure naming what never happened (``what`` may be a
    callable, evaluated only then, to describe the state at the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {what() if callable(what) else what}")


def dagster_env() -> dict[str, str]:
    """The environment of every subprocess: this process's, which the fixture has pointed at the tmp home."""
    return dict(os.environ)


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no {path})"
    return "\n".join(text.splitlines()[-lines:])


def stop_process(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """SIGTERM the process we started; SIGKILL its session's stragglers (run workers) afterwards."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session (start_new_session): only what it spawned
    except (ProcessLookupError, PermissionError):
        pass


def _wait_until_daemon_ready(instance: dg.DagsterInstance, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + DAEMON_READY_TIMEOUT
    wanted = {"SENSOR", "QUEUED_RUN_COORDINATOR"}
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dagster-daemon exited with {proc.returncode}:\n{tail(log)}")
        if wanted <= set(instance.get_daemon_heartbeats()):
            return
        time.sleep(0.5)
    raise RuntimeError(f"dagster-daemon sent no heartbeat within {DAEMON_READY_TIMEOUT} s:\n{tail(log)}")


# The product's daemon (dagster-daemon run, its loops woken by new work); tests of Dagster's own timer pass
# DAGSTER_DAEMON.
PRODUCT_DAEMON = "backfill-assets-daemon"
DAGSTER_DAEMON = "dagster-daemon"


def start_daemon(
    instance: dg.DagsterInstance, home: Path, *workspace_args: str, command: str = PRODUCT_DAEMON,
    daemon_options: tuple[str, ...] = (),
) -> tuple[subprocess.Popen, Path]:
    """A ready ``backfill-assets-daemon [daemon_options] run`` (or ``command run``, in its own session) on
    ``home``; ``workspace_args`` says where its code is (default: the package as a python module). Returns the
    process and its log."""
    log_path = home / "daemon.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [dagster_bin(command), *daemon_options, "run", *(workspace_args or ("-m", CODE_LOCATION_MODULE))],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dagster_env(),
            cwd=str(home),
            start_new_session=True,
        )
    try:
        _wait_until_daemon_ready(instance, proc, log_path)
    except BaseException:
        stop_process(proc)
        raise
    return proc, log_path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_code_server(home: Path, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, Path]:
    """A ready ``dagster api grpc`` (in its own session) serving the orders code location on a free port of
    127.0.0.1, as a Kubernetes or Docker deployment runs its code: the daemon and the webserver connect to it
    through ``home/workspace.yaml`` (a ``grpc_server`` entry) instead of each starting code servers of their own,
    which Dagster's daemon replaces every minute. Returns the process and the workspace file."""
    port, log_path, workspace = free_port(), home / "code_server.log", home / "workspace.yaml"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [dagster_bin("dagster"), "api", "grpc", "-m", CODE_LOCATION_MODULE, "-h", "127.0.0.1", "-p", str(port)],
            stdout=log, stderr=subprocess.STDOUT, env=env or dagster_env(), cwd=str(home), start_new_session=True,
        )
    deadline = time.monotonic() + DAEMON_READY_TIMEOUT
    while "Started Dagster code server" not in log_path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_process(proc)
            raise RuntimeError(f"the code server did not start:\n{tail(log_path)}")
        time.sleep(0.2)
    workspace.write_text(
        "load_from:\n  - grpc_server:\n"
        f"      host: 127.0.0.1\n      port: {port}\n      location_name: {CODE_LOCATION_MODULE}\n"
    )
    return proc, workspace


class Webserver:
    """A ``dagster-webserver`` (in its own session) on a free port of 127.0.0.1, serving the orders code location
    on the home the fixture points at (through its ``workspace.yaml`` when it has one: a code server of the home's
    own, ``start_code_server``). Stop it with ``stop_process(server.proc)``."""

    def __init__(self, home: Path):
        workspace = home / "workspace.yaml"
        where = ["-w", str(workspace)] if workspace.exists() else ["-m", CODE_LOCATION_MODULE]
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = home / "webserver.log"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [dagster_bin("dagster-webserver"), *where, "-h", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT, env=dagster_env(), cwd=str(home), start_new_session=True,
            )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + WEBSERVER_READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"dagster-webserver exited with {self.proc.returncode}:\n{tail(self.log)}", pytrace=False)
            try:
                with urllib.request.urlopen(f"{self.base}/server_info", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        pytest.fail(f"dagster-webserver did not answer within {WEBSERVER_READY_TIMEOUT} s:\n{tail(self.log)}")

    def graphql(self, query: str, variables: dict) -> dict:
        return post_graphql(self.base, query, variables)


def serving_webserver(home: Path) -> Iterator[Webserver]:
    """A ready ``Webserver`` on ``home``, stopped afterwards: for a fixture to yield from."""
    server = Webserver(home)
    try:
        server.wait_ready()
        yield server
    finally:
        stop_process(server.proc)


def post_graphql(base: str, query: str, variables: dict) -> dict:
    """The ``data`` of a GraphQL request to the webserver at ``base``, as the UI sends it; errors fail the test."""
    body = json.dumps({"query": query, "variables": variables}).encode()
    req = urllib.request.Request(f"{base}/graphql", data=body, headers={"Content-Type": "application/json"},
                                 method="POST")
    try:
        with urllib.request.urlopen(req, timeout=60) as response:
            payload = json.loads(response.read())
    except urllib.error.HTTPError as exc:  # the webserver's own words, not only its status code
        pytest.fail(f"POST {base}/graphql: HTTP {exc.code}: {exc.read().decode(errors='replace')[:2000]}")
    assert not payload.get("errors"), payload
    return payload["data"]


# The UI's backfill dialog's mutation.
LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on UnauthorizedError { message }
    ... on InvalidSubsetError { message }
    ... on PartitionSetNotFoundError { message }
    ... on RunConflict { message }
    ... on ConflictingExecutionParamsError { message }
    ... on NoModeProvidedError { message }
  }
}
"""

