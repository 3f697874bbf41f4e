"""backfill-assets-daemon: requests, depends-on-past chains and UI backfills move when work arrives, not on a timer.

The daemon here passes over sensors and backfills only when woken: its timer (``--backstop-seconds``) is ten
minutes, longer than any of these tests may take. Each test therefore fails if the path it names waits for a
timer pass instead of being woken (dagster-daemon would take 5 s per driver step and 30 s per UI backfill step;
with no wake-up at all, nothing would move for ten minutes).
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import dagster as dg
import pytest

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store import db
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.location_cache import snapshot_path
from backfill_assets.integration.runs.warm_launcher import RunWorker
from tests.orders import CALENDAR

from .conftest import E2E, FINISHED, Webserver, dagster_env, poll, prepare_home, start_daemon, stop_process
from .test_ui_adoption import LAUNCH

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("e2e/test_woken_daemon")]

SEED_FROM, SEED_TO = "2022-09-01", "2022-09-16"
BACKSTOP_SECONDS = "600"
TIMEOUT = 120.0
BATCHABLE = f"{RAW_ORDERS},{ORDER_FACTS},{DAILY_REVENUE}"


@pytest.fixture(scope="module")
def woken(tmp_path_factory: pytest.TempPathFactory):
    """A backfill-assets-daemon whose timers pass every ten minutes, and a webserver for GraphQL launches."""
    home = tmp_path_factory.mktemp("woken") / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        prepare_home(mp, home, seed_from=SEED_FROM, seed_to=SEED_TO)
        instance = dg.DagsterInstance.get()
        webserver = Webserver(home)
        daemon, log = start_daemon(instance, home, daemon_options=("--backstop-seconds", BACKSTOP_SECONDS))
        try:
            webserver.wait_ready()
            yield E2E(home, instance, daemon, log), webserver
        finally:
            stop_process(daemon)
            stop_process(webserver.proc)
            instance.dispose()
            db.dispose_all()


def runs_per_cell(e2e: E2E, request_id: str) -> Counter:
    cells = Counter()
    for record in e2e.run_records(request_id):
        run = record.dagster_run
        for asset in run.asset_selection or ():
            cells[(asset.to_user_string(), run.tags.get(T.DAGSTER_PARTITION))] += 1
    return cells


def test_requests_made_back_to_back_start_at_once_and_submit_each_cell_once(woken):
    e2e, _ = woken
    days = ["2022-09-01", "2022-09-02", "2022-09-03"]
    made: list[str] = []

    def create(day: str) -> None:
        made.append(e2e.create("--assets", BATCHABLE, "--from", day, "--to", day, "--reprocess", "completed",
                               "--partitions-per-run", "1")["request_id"])

    for day in days:  # each create wakes the daemon while the previous request's runs are being submitted
        create(day)
    for request_id in made:
        # Closing the request needs a driver pass after its last run ended: the finished run woke it.
        e2e.wait(request_id, timeout=str(TIMEOUT))
        cells = runs_per_cell(e2e, request_id)
        assert set(cells.values()) == {1}, cells  # one run per cell: no tick submitted a cell twice
        # Forked by the warm worker the daemon started with it: no run waited for a new interpreter.
        assert all(RunWorker.from_tags(r.dagster_run.tags) for r in e2e.run_records(request_id))


def days_between(first: str, last: str) -> list[str]:
    return CALENDAR.keys_between(first, last)


def snapshots_published_through(e2e: E2E, day: str) -> None:
    """customer_snapshot (and its upstream) published for every day from the calendar's first through ``day``:
    a depends-on-past day needs its previous one."""
    days = days_between(CALENDAR.first_day.isoformat(), day)
    missing = [d for d in days if e2e.catalog.current(CUSTOMER_SNAPSHOT, d) is None]
    e2e.prepare(missing, [RAW_ORDERS, ORDER_FACTS, CUSTOMER_SNAPSHOT])


def test_a_depends_on_past_chain_advances_as_each_day_finishes(woken):
    e2e, _ = woken
    chain = ["2022-09-05", "2022-09-06", "2022-09-07", "2022-09-08"]
    snapshots_published_through(e2e, "2022-09-04")
    e2e.prepare(chain, [RAW_ORDERS, ORDER_FACTS])
    # Two days per run: the chain's second run can only start once its first has finished.
    request_id = e2e.create("--assets", CUSTOMER_SNAPSHOT, "--from", chain[0], "--to", chain[-1],
                            "--reprocess", "completed", "--partitions-per-run", "2")["request_id"]
    e2e.wait(request_id, timeout=str(TIMEOUT))
    runs = e2e.run_records(request_id)
    assert [(r.dagster_run.tags[T.CHUNK_FIRST], r.dagster_run.tags[T.CHUNK_LAST]) for r in runs] == [
        (chain[0], chain[1]), (chain[2], chain[3])]  # two days, then the next two
    starts = [r.start_time for r in runs]
    ends = [r.end_time for r in runs]
    # Serial: each day's run started after the previous one ended.
    assert all(start >= end for start, end in zip(starts[1:], ends[:-1], strict=True))


def test_a_ui_backfill_of_a_depends_on_past_asset_does_not_wait_for_the_backfill_loop(woken):
    e2e, webserver = woken
    days = ["2022-09-11", "2022-09-12", "2022-09-13", "2022-09-14"]
    snapshots_published_through(e2e, "2022-09-10")
    e2e.prepare(days, [RAW_ORDERS, ORDER_FACTS])
    launched = webserver.graphql(
        LAUNCH,
        {"params": {"assetSelection": [{"path": [CUSTOMER_SNAPSHOT]}], "partitionNames": days,
                    "tags": [{"key": T.REPROCESS, "value": "completed"}], "title": "woken ui backfill"}},
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    backfill_id = launched["backfillId"]

    def runs_done() -> list[dg.DagsterRun] | None:
        runs = e2e.instance.get_runs(dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id}))
        done = [r for r in runs if r.status in FINISHED]
        return done if len(done) == len(days) else None

    runs = poll(runs_done, TIMEOUT, lambda: f"the {len(days)} runs of backfill {backfill_id}\n{e2e.log_tail()}")
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
    published = {day: e2e.catalog.current(CUSTOMER_SNAPSHOT, day) for day in days}
    assert all(published.values()), published


# ---- request create on the code location's snapshot (integration/location_cache.py) ------------------------------

# A project of its own whose code location is the orders example's definitions: a code-location file this test
# may edit (the daemon serves the example's module; both freeze the same assets under the same code version).
PROJECT_MODULE = "woken_project.definitions"
PROJECT_DEFINITIONS = '''"""The project's code location: the orders example's assets{mark}."""
from backfill_assets.examples.orders.definitions import defs

__all__ = ["defs"]
'''
SNAPSHOT_DAYS = ("2022-09-15", "2022-09-16", "2022-09-09")  # days no other test of this daemon requests


def cli_process(project: Path, *args: str) -> tuple[dict, set[str]]:
    """``backfill-assets ... --json`` as a user runs it, from the project's folder: its JSON, and every module the
    process imported (the interpreter's own import log, ``PYTHONPROFILEIMPORTTIME``, set for every call alike: the
    snapshot's key covers the environment)."""
    env = {**dagster_env(), "BACKFILL_MODULE": PROJECT_MODULE, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([dagster_bin("backfill-assets"), *args, "--json"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return json.loads(done.stdout), imported


def create_in_project(e2e: E2E, project: Path, day: str) -> tuple[str, bool]:
    """A one-day raw_orders request made by a ``request create`` process, and whether that process imported Dagster
    (it loaded the code location instead of reading its snapshot)."""
    e2e.assert_daemon_alive()
    created, imported = cli_process(project, "request", "create", "--assets", RAW_ORDERS, "--from", day, "--to", day,
                                    "--reprocess", "completed", "--requested-by", "e2e-tester")
    return created["request_id"], "dagster" in imported


def published_by(e2e: E2E, request_id: str, day: str) -> None:
    """The request's run was started by the woken daemon (its timer passes every ten minutes) and published."""
    e2e.wait(request_id, timeout=str(TIMEOUT))
    assert e2e.run_records(request_id), request_id
    assert e2e.catalog.current(RAW_ORDERS, day).request_id == request_id


def test_request_create_reads_the_snapshot_a_load_wrote_until_a_code_location_file_changes(woken, tmp_path):
    e2e, _ = woken
    project = tmp_path / "project"
    (project / "woken_project").mkdir(parents=True)
    (project / "woken_project" / "__init__.py").write_text("")
    definitions = project / "woken_project" / "definitions.py"
    definitions.write_text(PROJECT_DEFINITIONS.format(mark=""))
    snapshot = snapshot_path(e2e.home, PROJECT_MODULE, project)
    first, second, edited = SNAPSHOT_DAYS

    # No snapshot yet: the command loads the code location (Dagster with it) and writes one.
    request_id, loaded = create_in_project(e2e, project, first)
    assert loaded and snapshot.is_file()
    published_by(e2e, request_id, first)
    written = snapshot.read_text()

    # The next command freezes its request on the snapshot: Dagster is never imported; the daemon queues the runs.
    request_id, loaded = create_in_project(e2e, project, second)
    assert not loaded
    published_by(e2e, request_id, second)
    shown, imported = cli_process(project, "request", "show", request_id)
    assert shown["status"] == "completed" and "dagster" not in imported

    # An edited code-location file: the snapshot no longer describes the code location; the command loads it again
    # and writes the new snapshot.
    definitions.write_text(PROJECT_DEFINITIONS.format(mark=", as the project names them"))
    request_id, loaded = create_in_project(e2e, project, edited)
    assert loaded and snapshot.read_text() != written
    published_by(e2e, request_id, edited)
