"""`backfill-assets catalog version` and `catalog upgrade` on a home whose catalog was made before the schema was
versioned (tests/fixtures/catalog_before_versioning.db); the installed package carries its revisions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model.settings import PACKAGE_DIR
from backfill_assets.engine.store import db
from backfill_assets.engine.store.schema_version import HEAD, UPGRADE_COMMAND
from tests.homes import fresh_home

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "catalog_before_versioning.db"


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A Dagster home whose catalog.db is a copy of the fixture."""
    home = tmp_path / "home"
    fresh_home(home, monkeypatch)
    shutil.copyfile(FIXTURE, home / "catalog.db")
    yield home
    db.dispose_all()


def test_catalog_version_exits_1_until_the_catalog_is_upgraded(home):
    before = invoke("--home", str(home), "catalog", "version")
    assert before.exit_code == 1
    assert before.output.splitlines() == [
        f"catalog  sqlite:///{home / 'catalog.db'}", "schema   none", f"code     {HEAD}",
        f"made before schema versions were recorded: run `{UPGRADE_COMMAND}`",
    ]
    assert invoke("--home", str(home), "catalog", "upgrade").exit_code == 0
    after = invoke("--home", str(home), "catalog", "version", "--json")
    assert after.exit_code == 0
    assert json.loads(after.output) == {"url": f"sqlite:///{home / 'catalog.db'}", "revision": HEAD, "head": HEAD,
                                        "standing": "at head", "needs_upgrade": False}


def test_catalog_upgrade_prints_from_and_to_version_and_a_second_run_changes_nothing(home):
    first = invoke("--home", str(home), "catalog", "upgrade")
    assert (first.exit_code, first.output) == (0, f"catalog sqlite:///{home / 'catalog.db'}: none → {HEAD}\n")
    again = invoke("--home", str(home), "catalog", "upgrade")
    assert again.output == f"catalog sqlite:///{home / 'catalog.db'}: {HEAD} → {HEAD} (already up to date)\n"


def test_a_command_on_a_catalog_from_before_versioning_names_the_upgrade_command(home):
    refused = CliRunner().invoke(cli, ["--home", str(home), "versions", "order_facts", "2022-10-01"])
    assert refused.exit_code == 2
    assert refused.output == (f"error: catalog sqlite:///{home / 'catalog.db'} has no schema version, this "
                              f"backfill_assets needs {HEAD}: run `{UPGRADE_COMMAND}`\n")
    invoke("--home", str(home), "catalog", "upgrade")
    listed = invoke("--home", str(home), "versions", "order_facts", "2022-10-01", "--json")
    assert [v["state"] for v in json.loads(listed.output)] == ["PUBLISHED"]


def test_an_installed_wheel_carries_the_revisions_and_upgrades_from_any_folder(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                    str(PACKAGE_DIR.parent)], check=True, capture_output=True, timeout=300)
    [wheel] = tmp_path.glob("backfill_assets-*.whl")
    installed = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(installed)
    assert {"backfill_assets/engine/store/migrations/env.py",
            "backfill_assets/engine/store/migrations/versions/0001_baseline.py"} <= names
    catalog = shutil.copyfile(FIXTURE, tmp_path / "catalog.db")
    code = ("import backfill_assets, sys\n"
            "from backfill_assets.engine.store.catalog_upgrade import upgrade_catalog\n"
            f"assert backfill_assets.__file__.startswith({str(installed)!r}), backfill_assets.__file__\n"
            f"print(upgrade_catalog('sqlite:///{catalog}').to_revision)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(installed)})
    assert (result.returncode, result.stdout.strip()) == (0, HEAD), result.stderr
