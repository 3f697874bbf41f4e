"""N, naive Dagster: Dagster's own asset backfill (GraphQL ``launchPartitionBackfill``) through dagster-daemon.

dagster-webserver is there only to accept the GraphQL launch, as it would for a user clicking in the UI;
dagster-daemon's backfill daemon then creates the runs and its queued-run coordinator starts them. The instance is
stock Dagster (``make_home(stock=True)``): Dagster's own run coordinator and launcher, not the product's.
"""

from __future__ import annotations

import time

from backfill_assets.cli.daemon import dagster_bin

from ..checks import revenue_from_files
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


def launch(url: str, keys: list[str]) -> str:
    params = {"assetSelection": [{"path": [a]} for a in ASSETS], "partitionNames": keys, "title": "bench N"}
    result = post(url, LAUNCH, {"params": params})["launchPartitionBackfill"]
    if result["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"launchPartitionBackfill: {result}")
    return result["backfillId"]


def status(url: str, backfill_id: str) -> str:
    result = post(url, STATUS, {"id": backfill_id})["partitionBackfillOrError"]
    if result["__typename"] != "PartitionBackfill":
        raise RuntimeError(f"partitionBackfillOrError: {result}")
    return result["status"]


def run(ws: Workspace, sizes: Sizes, timeout: float) -> Outcome:
    base = ws.dir("N")
    home = make_home(base / "home", sizes.max_active, stock=True)
    out = base / "out"
    env = dagster_env(home, ws.source_url, BENCH_OUT_DIR=str(out))
    port = free_port()
    url = f"http://127.0.0.1:{port}/graphql"
    web_argv = [dagster_bin("dagster-webserver"), "-m", MODULE, "-h", "127.0.0.1", "-p", str(port)]
    logs = base / "logs"
    # Create the instance's SQLite storage before two processes race to migrate it (alembic would record two
    # heads and both services would fail to start).
    instance = open_instance(home)
    with service("dagster-webserver", web_argv, env, logs, REPO) as web, service(
        "dagster-daemon", [dagster_bin("dagster-daemon"), "run", "-m", MODULE], env, logs, REPO
    ) as daemon:
        wait_until(lambda: post(url, "{ version }") is not None, "dagster-webserver", 120, [web])
        daemon_ready = lambda: daemons_alive(instance, "BACKFILL", "QUEUED_RUN_COORDINATOR")  # noqa: E731
        wait_until(daemon_ready, "dagster-daemon", 120, [daemon])
        with ProcessSampler([web.pid, daemon.pid]) as sampler:
            started = time.time()
            backfill_id = launch(url, sizes.keys)
            final: list[str] = []

            def finished() -> bool:
                final[:] = [status(url, backfill_id)]
                return final[0] not in NOT_DONE

            wait_until(finished, "naive asset backfill", timeout, [web, daemon], poll=1.0)
        records = runs_tagged(instance, BACKFILL_TAG, backfill_id)
        details = {
            "backfill_status": final[0],
            "first_run_start_s": first_start(records, started),
            "last_run_end_s": last_end(records, started),
            **instance_classes(instance),
            "breakdown": run_breakdown(instance, records, sizes.max_active),
        }
    check = revenue_from_files(out, sizes.keys)
    return Outcome("N", "naive Dagster asset backfill", sampler.usage, len(records), check, details)

