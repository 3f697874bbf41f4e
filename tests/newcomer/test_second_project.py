"""A team's existing project adopts gated assets, from the built wheel in a fresh virtualenv outside the repository:
two code locations on one instance (Berlin, New York), each with a ``daily_usage`` under its own key prefix, beside
the team's unpartitioned, hourly and date × region assets. The workspace loads; a backfill of each location's asset
is launched through the webserver's GraphQL API (as the UI's dialog does) and published by the daemon; each location
reads its own day; the ordinary assets materialize; a plain report reads Berlin's published day through the IO
manager, and a rollback of that day names the report among the readers."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.services import LAUNCH_BACKFILL, free_port, post_graphql
from tests.newcomer import project_files
from tests.newcomer.test_quick_start import _stop_session, build_wheel, newcomer_env, newcomer_python

pytestmark = [pytest.mark.newcomer, pytest.mark.release, pytest.mark.timeout(900)]
DAY = "2024-03-31"  # 23 hours in Berlin, 24 in New York
PUBLISH_TIMEOUT_S = 240


class Project:
    """The project folder, its virtualenv's commands and its instance."""

    def __init__(self, root: Path, venv: Path):
        self.root, self.bin = root, venv / "bin"
        self.env = {**newcomer_env(), "DAGSTER_HOME": str(root / ".dagster_home"),
                    "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run([str(self.bin / args[0]), *args[1:]], cwd=self.root, env=self.env, capture_output=True,
                              text=True, timeout=timeout)
        output = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == 0, f"{' '.join(args)} exited {done.returncode}:\n{output}"
        return done

    def cli_json(self, location: str, *args: str):
        return json.loads(self.run("backfill-assets", "-m", f"energy_co.{location}", *args, "--json").stdout)

    def start(self, *args: str, log: str) -> subprocess.Popen:
        with (self.root / log).open("ab") as out:
            return subprocess.Popen([str(self.bin / args[0]), *args[1:]], cwd=self.root, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    base = tmp_path_factory.mktemp("second_project")
    wheel = build_wheel(base / "dist")
    venv = base / "venv"
    # A current pip, as the README's quick start takes: it resolves the dependencies in a third of the time.
    subprocess.run([newcomer_python(), "-m", "venv", "--upgrade-deps", str(venv)], check=True, timeout=180)
    installed = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", f"{wheel}[dg]"],
                               env=newcomer_env(), capture_output=True, text=True, timeout=840)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    made = subprocess.run([str(venv / "bin" / "backfill-assets"), "init", "energy_co", "--timezone", "Europe/Berlin",
                           "--start", "2024-01-01"], cwd=base, env=newcomer_env(), capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    root = base / "energy_co"
    (root / "energy_co" / "berlin.py").write_text(project_files.BERLIN)
    (root / "energy_co" / "new_york.py").write_text(project_files.NEW_YORK)
    (root / "workspace.yaml").write_text(project_files.WORKSPACE)
    # The project's own definitions module (what [tool.dg] and [tool.dagster] name) is Berlin's location.
    (root / "energy_co" / "definitions.py").write_text("from energy_co.berlin import defs\n")
    return Project(root, venv)


def test_the_team_project_loads_runs_its_own_assets_and_publishes_each_location_from_a_ui_backfill(project):
    validated = project.run("dagster", "definitions", "validate", "-w", "workspace.yaml")
    assert "energy_co.berlin" in validated.stdout + validated.stderr
    checked = project.run("dg", "check", "defs")
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    port = free_port()
    processes = [project.start("backfill-assets-daemon", "run", "-w", "workspace.yaml", log="daemon.log"),
                 project.start("dagster-webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port),
                               log="webserver.log")]
    try:
        _wait_for_webserver(port, processes[1])
        for location in ("berlin", "new_york"):
            launched = post_graphql(f"http://127.0.0.1:{port}", LAUNCH_BACKFILL, {"params": {
                "assetSelection": [{"path": [location, "daily_usage"]}], "partitionNames": [DAY],
                "title": f"{location} first load"}})["launchPartitionBackfill"]
            assert launched["__typename"] == "LaunchBackfillSuccess", launched
        for location in ("berlin", "new_york"):
            _wait_published(project, location, 1)
        _each_location_reads_its_own(project)
        _ordinary_assets_materialize(project)
        _the_report_reads_the_published_day_and_rollback_names_it(project)
        # Read before the stop: the daemon starts a fresh code server every minute, and one caught importing by
        # the stop's signal prints its interrupted import, which says nothing about the work under test.
        daemon_log = (project.root / "daemon.log").read_text()
    finally:
        for proc in processes:
            _stop_session(proc.pid)
    assert "Traceback" not in daemon_log, daemon_log[-5000:]


def _each_location_reads_its_own(project: Project) -> None:
    berlin = project.cli_json("berlin", "read", "berlin/daily_usage", DAY)
    new_york = project.cli_json("new_york", "read", "new_york/daily_usage", DAY)
    assert [r["kwh"] for r in berlin["records"]] == [11.5, 23.0]  # 23 hours
    assert [r["kwh"] for r in new_york["records"]] == [48.0, 72.0]  # 24 hours
    assert berlin["version_id"].startswith(f"berlin/daily_usage/{DAY}/")
    assert new_york["version_id"].startswith(f"new_york/daily_usage/{DAY}/")


def _ordinary_assets_materialize(project: Project) -> None:
    for selection, partition in (("meter_registry", None), ("hourly_readings", "2024-03-31-05:00"),
                                 ("regional_usage", f"{DAY}|north")):
        args = ["dagster", "asset", "materialize", "-m", "energy_co.berlin", "--select", selection]
        project.run(*args, *(["--partition", partition] if partition else []))


def _the_report_reads_the_published_day_and_rollback_names_it(project: Project) -> None:
    # A second version of Berlin's day, requested through the CLI by its prefixed name and published by the daemon.
    project.cli_json("berlin", "request", "create", "--assets", "berlin/daily_usage", "--from", DAY, "--to", DAY,
                     "--reprocess", "completed", "--reason", "second load")
    _wait_published(project, "berlin", 2)
    project.run("dagster", "asset", "materialize", "-m", "energy_co.berlin", "--select", "usage_report",
                "--partition", DAY)
    rolled = project.cli_json("berlin", "rollback", "berlin/daily_usage", DAY, "--reason", "report check")
    assert "external:asset:usage_report" in json.dumps(rolled), rolled


def _wait_published(project: Project, location: str, count: int) -> None:
    deadline = time.monotonic() + PUBLISH_TIMEOUT_S
    states: list[str] = []
    while time.monotonic() < deadline:
        versions = project.cli_json(location, "versions", f"{location}/daily_usage", DAY)
        states = [v["state"] for v in versions]
        if states.count("PUBLISHED") + states.count("SUPERSEDED") >= count:
            return
        time.sleep(1)
    pytest.fail(f"{location}/daily_usage {DAY}: {states} after {PUBLISH_TIMEOUT_S} s\n{_tail(project)}")


def _wait_for_webserver(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, "dagster-webserver exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail("dagster-webserver did not answer within 180 s")


def _tail(project: Project) -> str:
    return "".join(f"\n--- {name} ---\n{(project.root / name).read_text()[-3000:]}"
                   for name in ("daemon.log", "webserver.log") if (project.root / name).exists())
