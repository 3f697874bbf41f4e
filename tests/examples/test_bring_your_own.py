"""A third code location written only from the README's quick start (the blocks it says to save, byte for byte)
and the drill of docs/ASSETS.md: it loads in Dagster's own CLI and gets gated publishes, a rejected defect with the
old version serving, a request with reprocess=failed, reconcile and rollback, with no change to the library."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.db import dispose_all
from tests.driver_harness import drive
from tests.homes import HasStores, fresh_home
from tests.readme_blocks import drill_module, saved_files

PACKAGE = "my_meters"
MODULE = "my_meters.definitions"
# The README's assets as they are, given deliberate defects for the drill (the README's code knows nothing of it).
DRILL_MODULE = "my_meters.drill"
DAYS = ("2024-03-30", "2024-03-31", "2024-04-01")  # 2024-03-31 is 23 hours long in Berlin


def readme_code() -> str:
    return saved_files()[f"{PACKAGE}/definitions.py"]


def _forget_project() -> None:
    for name in (PACKAGE, MODULE, DRILL_MODULE):
        sys.modules.pop(name, None)


@pytest.fixture
def project(tmp_path, monkeypatch):
    folder = tmp_path / "my_project"
    folder.mkdir()
    (folder / PACKAGE).mkdir()
    (folder / PACKAGE / "__init__.py").write_text("")
    (folder / PACKAGE / "definitions.py").write_text(readme_code())
    (folder / PACKAGE / "drill.py").write_text(drill_module())
    home = folder / ".dagster_home"
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    fresh_home(home, monkeypatch, code_version="byo-1")
    _forget_project()
    module = importlib.import_module(MODULE)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        yield folder, module, instance
    _forget_project()
    dispose_all()


class _Env(HasStores):
    def __init__(self, instance):
        self.instance = instance
        self.settings = Settings.from_env()


def _cli(*args: str, module: str = MODULE) -> dict:
    result = CliRunner().invoke(cli, ["-m", module, *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_readme_code_location_loads_in_dagsters_own_cli(project):
    folder, _, _ = project
    result = subprocess.run([dagster_bin("dagster"), "definitions", "validate", "-m", MODULE], cwd=folder,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_readmes_test_of_a_gated_asset_passes_under_pytest(project):
    """The README's ``test_meters.py``, byte for byte, run by pytest in the project folder as a user runs it."""
    folder, _, _ = project
    (folder / "test_meters.py").write_text(saved_files()["tests/test_definitions.py"])
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_meters.py"],
                            cwd=folder, env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout


def test_the_readme_code_location_gets_every_promise(project):
    _, module, instance = project
    env = _Env(instance)
    first = _cli("request", "create", "--assets", "meter_readings,daily_usage", "--from", DAYS[0], "--to", DAYS[-1],
                 "--reason", "first load")
    drive(env, first["request_id"], defs=module.defs)
    catalog = env.catalog
    first_versions = {d: catalog.current("daily_usage", d) for d in DAYS}
    assert all(first_versions.values())
    assert catalog.current("meter_readings", DAYS[1]).rows == 3 * 23  # three meters, 23 hours

    # The drill: the same assets given a deliberate defect, as a second code location over the same catalog.
    drill_defs = importlib.import_module(DRILL_MODULE).defs
    defect = {"daily_usage": {"defect_days": {DAYS[1]: "drop_rows"}}}
    drill = _cli("request", "create", "--assets", "daily_usage", "--from", DAYS[0], "--to", DAYS[-1],
                 "--reprocess", "completed", "--reason", "defect drill", "--conf", json.dumps(defect),
                 module=DRILL_MODULE)
    drive(env, drill["request_id"], defs=drill_defs)
    rejected = catalog.versions_of("daily_usage", DAYS[1])[-1]
    assert rejected.state == VersionState.REJECTED.value
    assert catalog.current("daily_usage", DAYS[1]).version_id == first_versions[DAYS[1]].version_id

    retry = _cli("request", "create", "--assets", "daily_usage", "--from", DAYS[0], "--to", DAYS[-1],
                 "--reprocess", "failed", "--reason", "re-run what failed")
    drive(env, retry["request_id"], defs=module.defs)
    report = _cli("reconcile", retry["request_id"])
    assert {c["partition_key"]: c["decision"] for c in report["cells"]} == {
        DAYS[0]: M.SKIPPED, DAYS[1]: M.PUBLISHED, DAYS[2]: M.SKIPPED}
    assert report["complete"]

    rolled = _cli("rollback", "daily_usage", DAYS[2], "--reason", "back to the first load")
    assert rolled["serving"] == first_versions[DAYS[2]].version_id
    assert catalog.current("daily_usage", DAYS[2]).version_id == first_versions[DAYS[2]].version_id


VERSION_OF = (
    "import importlib, sys; from backfill_assets import graph_of; "
    "from backfill_assets.engine.model.settings import code_version; "
    "m = importlib.import_module(sys.argv[1]); print(code_version(sources=graph_of(m.defs).code_sources()))"
)


def _loaded_code_version(folder: Path, module: str) -> str:
    """The code version a freshly started process (a reloaded code server, the CLI) computes."""
    env = {k: v for k, v in os.environ.items() if k != "BACKFILL_CODE_VERSION"}
    result = subprocess.run([sys.executable, "-c", VERSION_OF, module], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_editing_the_code_location_or_a_helper_of_its_package_is_a_new_code_version(project):
    folder, _, _ = project
    before = _loaded_code_version(folder, MODULE)
    assert "+loc-" in before
    (folder / PACKAGE / "definitions.py").write_text(readme_code() + "\n# a changed transform\n")
    assert _loaded_code_version(folder, MODULE) != before

    package = folder / "metering"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text("FACTOR = 1\n")
    (package / "definitions.py").write_text(readme_code())
    first = _loaded_code_version(folder, "metering.definitions")
    (package / "helpers.py").write_text("FACTOR = 2\n")  # not a transform's own file, but part of the project
    assert _loaded_code_version(folder, "metering.definitions") != first
