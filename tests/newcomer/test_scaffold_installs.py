"""A project ``backfill-assets init`` wrote installs in a fresh virtualenv, with nothing of this one visible: its
dependency names the library where it was installed from (here this checkout), so ``pip install -e .`` finds it
without an index that serves this version."""

from __future__ import annotations

import subprocess
import venv
from pathlib import Path

import pytest

from backfill_assets.cli.daemon import dagster_bin
from tests.newcomer.test_quick_start import newcomer_env

pytestmark = [pytest.mark.newcomer, pytest.mark.release, pytest.mark.timeout(900)]


def test_a_scaffolded_project_installs_in_a_fresh_virtualenv(tmp_path):
    project = tmp_path / "shop"
    made = subprocess.run([dagster_bin("backfill-assets"), "init", str(project)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    env_dir = tmp_path / "fresh"
    # A current pip, as the README's quick start takes (`venv --upgrade-deps`).
    venv.EnvBuilder(with_pip=True, system_site_packages=False, upgrade_deps=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    installed = subprocess.run([python, "-m", "pip", "install", "--quiet", "-e", "."], cwd=project,
                               env=newcomer_env(), capture_output=True, text=True, timeout=840)
    assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    loaded = subprocess.run([python, "-c", "import shop.definitions, backfill_assets; print(backfill_assets.__file__)"],
                            cwd=tmp_path, env=newcomer_env(), capture_output=True, text=True, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert Path(loaded.stdout.strip()).is_relative_to(env_dir), loaded.stdout
