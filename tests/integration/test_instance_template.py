"""The instance config ships as package data: a new home gets it, a home with its own dagster.yaml is never
rewritten and the daemon names the blocks it lacks, and the wheel carries the file."""

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


def test_a_home_with_its_own_config_is_never_rewritten_and_its_missing_blocks_are_named(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    own = yaml.safe_dump(USERS_OWN)
    (home / "dagster.yaml").write_text(own)
    ensure_home(home)
    assert (home / "dagster.yaml").read_text() == own
    assert instance_template.missing_blocks(home) == [
        "`run_coordinator:` is QueuedRunCoordinator, not BackfillRunCoordinator",
        "no `run_launcher:` block",
        "no `concurrency:` block",
        "no `sensors:` block",
    ]
    assert instance_template.missing_blocks(ensure_home(tmp_path / "shipped")) == []


def test_the_daemon_names_the_missing_blocks_when_it_starts(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump(USERS_OWN))
    log = tmp_path / "daemon.log"
    with log.open("wb") as out:
        daemon = subprocess.Popen(
            [dagster_bin("backfill-assets-daemon"), "run", "-m", MODULE],
            env={**os.environ, "DAGSTER_HOME": str(home)}, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while "backfill-assets-daemon: warning:" not in log.read_text() and time.monotonic() < deadline:
            assert daemon.poll() is None, log.read_text()[-3000:]
            time.sleep(0.2)
    finally:
        stop_process(daemon)
    text = log.read_text()
    assert "no `run_launcher:` block" in text and "is QueuedRunCoordinator, not BackfillRunCoordinator" in text
    assert instance_template.template_path() in text


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
