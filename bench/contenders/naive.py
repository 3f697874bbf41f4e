"""N, naive Dagster: Dagster's own asset backfill (GraphQL ``launchPartitionBackfill``) through stock
``dagster-daemon run``.

dagster-webserver is there only to accept the GraphQL launch, as it would for a user clicking in the UI;
dagster-daemon's backfill daemon then creates the runs and its queued-run coordinator starts them. The instance is
stock Dagster (``make_home(stock=True)``): Dagster's own run coordinator and launcher, not the product's.
"""

from __future__ import annotations

import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import dagster as dg

from backfill_assets.cli.daemon import dagster_bin

from ..checks import revenue_from_files
from ..daemons import command_text, daemon_argv
from ..dagster_facts import first_start, last_end, run_breakdown, runs_tagged
from ..dagster_home import daemons_alive, dagster_env, instance_classes, make_home, open_instance
from ..graphql import post
from ..measure import ProcessSampler
from ..outcome import Outcome
from ..plain import ASSETS
from ..ports import free_port
from ..services import service, wait_until
from ..workspace import REPO, Sizes, Workspace

MODULE = "bench.naive.definitions"
BACKFILL_TAG = "dagster/backfill"
NOT_DONE = ("REQUESTED", "CANCELING", "FAILING")

LAUNCH = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}"""
STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status }
    ... on Error { message }
  }
}"""


def launch(url: str, keys: list[str], assets: Sequence[str] = ASSETS, title: str = "bench N") -> str:
    """``launchPartitionBackfill`` of ``assets`` over ``keys``, as the UI's dialog sends it; the backfill's id."""
    params = {"assetSelection": [{"path": [a]} for a in assets], "partitionNames": keys, "title": title}
    result = post(url, LAUNCH, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"launchPartitionBackfill: {result}")
    return result["backfillId"]


def status(url: str, backfill_id: str) -> str:
    result = post(url, STATUS, {"id": backfill_id})["partitionBackfillOrError"]
    if result["__typename"] != "PartitionBackfill":
        raise RuntimeError(f"partitionBackfillOrError: {result}")
    return result["status"]


@dataclass
class WebStack:
    """dagster-webserver (to accept the GraphQL launch) beside a daemon, on one DAGSTER_HOME."""

    url: str
    instance: dg.DagsterInstance
    services: list[subprocess.Popen]
    daemon_command: str

    def wait_backfill(self, backfill_id: str, timeout: float, what: str) -> str:
        """Poll the backfill's status once a second (as the UI does) until it is done; its last status."""
        final: list[str] = []

        def finished() -> bool:
            final[:] = [status(self.url, backfill_id)]
            return final[0] not in NOT_DONE

        wait_until(finished, what, timeout, self.services, poll=1.0)
        return final[0]


@contextmanager
def webserver(module: str, env: dict, logs: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """dagster-webserver serving ``module`` on a free loopback port, answering; yields its GraphQL URL and process.
    The instance's storage must exist already (see :func:`web_stack`)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/graphql"
    argv = [dagster_bin("dagster-webserver"), "-m", module, "-h", "127.0.0.1", "-p", str(port)]
    with service("dagster-webserver", argv, env, logs, REPO) as web:
        wait_until(lambda: post(url, "{ version }") is not None, "dagster-webserver", 120, [web])
        yield url, web


@contextmanager
def web_stack(module: str, env: dict, home: Path, logs: Path, daemon: list[str]) -> Iterator[WebStack]:
    """The webserver serving ``module`` and the ``daemon`` command line, both ready (the daemon's backfill and
    run-queue loops have a heartbeat)."""
    # Create the instance's SQLite storage before two processes race to migrate it (alembic would record two
    # heads and both services would fail to start).
    instance = open_instance(home)
    with webserver(module, env, logs) as (url, web), service(Path(daemon[0]).name, daemon, env, logs, REPO) as proc:
        daemon_ready = lambda: daemons_alive(instance, "BACKFILL", "QUEUED_RUN_COORDINATOR")  # noqa: E731
        wait_until(daemon_ready, "daemon", 120, [proc])
        yield WebStack(url, instance, [web, proc], command_text(daemon))


def run(ws: Workspace, sizes: Sizes, timeout: float) -> Outcome:
    base = ws.dir("N")
    home = make_home(base / "home", sizes.max_active, stock=True)
    out = base / "out"
    env = dagster_env(home, ws.source_url, BENCH_OUT_DIR=str(out))
    with web_stack(MODULE, env, home, base / "logs", daemon_argv(MODULE, stock=True)) as stack:
        with ProcessSampler([p.pid for p in stack.services]) as sampler:
            invoked = time.time()
            backfill_id = launch(stack.url, sizes.keys)
            returned = time.time()
            final = stack.wait_backfill(backfill_id, timeout, "naive asset backfill")
        records = runs_tagged(stack.instance, BACKFILL_TAG, backfill_id)
        details = {
            "backfill_status": final,
            "launch_s": round(returned - invoked, 2),
            "first_run_start_s": first_start(records, returned),
            "first_run_after_invocation_s": first_start(records, invoked),
            "last_run_end_s": last_end(records, invoked),
            "daemon_command": stack.daemon_command,
            **instance_classes(stack.instance),
            "breakdown": run_breakdown(stack.instance, records, sizes.max_active),
        }
    check = revenue_from_files(out, sizes.keys)
    return Outcome("N", "naive Dagster asset backfill", sampler.usage, len(records), check, details)
