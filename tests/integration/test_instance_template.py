"""The instance config ships as package data: a new home gets it, a home with its own dagster.yaml is never
rewritten, the daemon names what a promise needs that it lacks (or, for a complete home of other classes, the
optional accelerators it does not use), and the wheel carries the file."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import yaml

from backfill_assets.cli.app import ensure_home
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model.settings import PACKAGE_DIR
from backfill_assets.integration import instance_template
from tests.e2e.services import stop_process
from tests.orders import MODULE

USERS_OWN = {
    "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"},
    "run_monitoring": {"enabled": True},
}


def test_a_new_home_gets_the_shipped_config_read_from_the_package(tmp_path):
    home = ensure_home(tmp_path / "home")
    written = (home / "dagster.yaml").read_text()
    assert written == instance_template.template_text()
    shipped = yaml.safe_load(written)
    assert shipped["run_coordinator"]["class"] == "BackfillRunCoordinator"
    assert shipped["run_launcher"]["class"] == "WarmRunLauncher"


def test_a_home_with_its_own_config_is_never_rewritten_and_what_it_lacks_is_named(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    own = yaml.safe_dump(USERS_OWN)
    (home / "dagster.yaml").write_text(own)
    ensure_home(home)
    assert (home / "dagster.yaml").read_text() == own
    # Its coordinator is its own choice; the run queue's limits are what a promise needs.
    assert instance_template.missing_blocks(home) == ["no `concurrency:` block"]
    assert instance_template.missing_blocks(ensure_home(tmp_path / "shipped")) == []
    assert instance_template.accelerator_note(tmp_path / "shipped") is None


def _stock_home(home: Path, **classes: dict) -> Path:
    """A home of other classes than the library's (Dagster's own unless given), with the shipped limits."""
    home.mkdir()
    shipped = yaml.safe_load(instance_template.template_text())
    own = {**USERS_OWN, **classes, "concurrency": shipped["concurrency"]}
    (home / "dagster.yaml").write_text(yaml.safe_dump(own))
    return home


def test_a_home_of_other_classes_with_the_limits_lacks_nothing_and_is_told_what_each_accelerator_buys(tmp_path):
    stock = _stock_home(tmp_path / "stock")
    assert instance_template.lacking_blocks(stock) == []
    assert instance_template.accelerators(stock) == [
        "WarmRunLauncher (`run_launcher:`): runs start by forking a warm process instead of a new interpreter each",
        "BackfillRunCoordinator (`run_coordinator:`): backfills launched from Dagster (the UI, `dagster job "
        "backfill`) are paced by their backfill/max_active and backfill/order tags and counted in the backfill lane "
        "and their team's limit; without it their runs are queued unpaced",
        "SqliteEventLogReusingEngines, SqliteRunStorageKeepingConnections, SqliteScheduleStorageKeepingConnections "
        "(storage blocks of the shipped file): connections kept open (less CPU per run), and a pool slot taken by "
        "one step only (Dagster's SQLite claim can give one free slot to two steps)",
    ]
    k8s = _stock_home(
        tmp_path / "k8s",
        run_launcher={"module": "dagster_k8s", "class": "K8sRunLauncher"},
        storage={"postgres": {"postgres_url": {"env": "DAGSTER_PG_URL"}}},
    )
    assert instance_template.lacking_blocks(k8s) == []
    [launcher, coordinator, storage] = instance_template.accelerators(k8s)
    assert launcher.startswith("WarmRunLauncher") and coordinator.startswith("BackfillRunCoordinator")
    assert storage.startswith("PostgresEventLogAssigningFreedSlots, PostgresRunStorageAddingRunsWhole, "
                              "PostgresScheduleStorageRememberingSchema (storage blocks of "
                              "deploy/postgres/dagster.yaml)")


def test_the_daemon_notes_the_accelerators_of_a_complete_home_of_other_classes_when_it_starts(tmp_path):
    home = _stock_home(tmp_path / "home")
    log = tmp_path / "daemon.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [dagster_bin("backfill-assets-daemon"), "run", "-m", MODULE],
            env={**os.environ, "DAGSTER_HOME": str(home)}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "backfill-assets-daemon: note:" not in log.read_text() and time.monotonic() < deadline:
            assert daemon.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        stop_process(daemon)
    lines = [line for line in log.read_text().splitlines() if line.startswith("backfill-assets-daemon:")]
    assert len(lines) == 1, lines
    [line] = lines
    assert line.startswith(f"backfill-assets-daemon: note: {home / 'dagster.yaml'}: complete; optional accelerators")
    assert "WarmRunLauncher" in line and "BackfillRunCoordinator" in line and instance_template.template_path() in line
    assert "warning" not in line and "lack" not in line


def test_the_daemon_warns_of_what_a_promise_needs_and_names_where_to_take_it(tmp_path, capsys):
    from backfill_assets.integration.daemon import _warn_of_missing_blocks

    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(USERS_OWN))
    _warn_of_missing_blocks(home)
    err = capsys.readouterr().err
    assert err.startswith(f"backfill-assets-daemon: warning: {home / 'dagster.yaml'}: no `concurrency:` block. Add")
    assert instance_template.template_path() in err and "QueuedRunCoordinator" not in err
    assert len(err.splitlines()) == 1


def test_run_monitoring_turned_off_is_named(tmp_path):
    home = _stock_home(tmp_path / "home", run_monitoring={"enabled": False})
    assert instance_template.missing_blocks(home) == [
        "`run_monitoring.enabled` is not true: a run whose process died stays STARTED, so its cells are never run "
        "again"
    ]


def test_the_wheel_carries_the_instance_config(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
         str(PACKAGE_DIR.parent)],
        check=True, capture_output=True, timeout=300,
    )
    [wheel] = tmp_path.glob("backfill_assets-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("backfill_assets/instance/dagster.yaml").decode() == instance_template.template_text()
        metadata = archive.read(next(n for n in archive.namelist() if n.endswith("METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata


def test_the_repository_root_config_is_the_shipped_file():
    root = Path(PACKAGE_DIR.parent / "dagster.yaml")
    assert root.read_text() == instance_template.template_text()


def test_a_run_queue_without_a_per_team_limit_is_named_with_the_block_to_paste(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    shipped = yaml.safe_load(instance_template.template_text())
    runs = shipped["concurrency"]["runs"]
    runs["tag_concurrency_limits"] = [e for e in runs["tag_concurrency_limits"] if e["key"] != "backfill/team"]
    (home / "dagster.yaml").write_text(yaml.safe_dump(shipped))
    assert instance_template.missing_blocks(home) == [
        "`concurrency.runs.tag_concurrency_limits` has no per-team limit (key backfill/team, value "
        "applyLimitPerUniqueValue: true)"
    ]
    advice = instance_template.blocks_text(["concurrency"])
    assert "key: backfill/team" in advice and "applyLimitPerUniqueValue: true" in advice


def test_a_run_queue_without_a_limit_on_dagsters_backfill_runs_is_named(tmp_path):
    """Under a coordinator other than the library's, nothing puts a UI backfill's runs in the lane: only a limit on
    Dagster's own ``dagster/backfill`` tag keeps production's slot free from them."""
    home = tmp_path / "home"
    home.mkdir()
    shipped = yaml.safe_load(instance_template.template_text())
    runs = shipped["concurrency"]["runs"]
    assert {"key": "dagster/backfill", "limit": 3} in runs["tag_concurrency_limits"]
    runs["tag_concurrency_limits"] = [e for e in runs["tag_concurrency_limits"] if e["key"] != "dagster/backfill"]
    (home / "dagster.yaml").write_text(yaml.safe_dump(shipped))
    assert instance_template.missing_blocks(home) == [
        "`concurrency.runs.tag_concurrency_limits` has no limit on Dagster's backfill runs (key dagster/backfill, "
        "no value): a backfill launched from the UI may take every run slot, production's included"
    ]
