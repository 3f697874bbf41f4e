"""A request frozen under one code version is blocked once its code location's SQL template, or the version of a
distribution its transform imports, changes under it — exactly as when its transform's own module changes. Each
version is computed by a process of its own (the CLI, a restarted code server), as in a deployment."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from backfill_assets import backfills_for_instance, graph_of
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.integration.sensors.driver import drive_request
from tests.homes import HasStores, fresh_home

PACKAGE, MODULE, DAY = "sql_meters", "sql_meters.definitions", "2024-03-05"

DEFINITIONS = '''\
import sqlite3
from pathlib import Path

import pandas as pd
from meter_units import WH_PER_KWH

from backfill_assets import BusinessCalendar, backfill_definitions, gated_asset, not_empty

QUERIES = Path(__file__).parent / "queries"


@gated_asset(calendar=BusinessCalendar("Europe/Berlin", "2024-01-01"), audits=[not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter and business day, computed by the team's SQL."""
    with sqlite3.connect(":memory:") as db:
        return pd.read_sql((QUERIES / "daily_usage.sql").read_text(), db,
                           params={"day": interval.key, "wh_per_kwh": WH_PER_KWH})


defs = backfill_definitions(assets=[daily_usage])
'''
QUERY = "select :day as day, 'a' as sensor_id, 12000 / :wh_per_kwh as kwh\n"


def _meter_units(site: Path, version: str) -> None:
    """An installed distribution, as pip leaves one in site-packages."""
    (site / "meter_units").mkdir(parents=True, exist_ok=True)
    (site / "meter_units" / "__init__.py").write_text("WH_PER_KWH = 1000\n")
    for old in site.glob("meter_units-*.dist-info"):
        for file in old.iterdir():
            file.unlink()
        old.rmdir()
    info = site / f"meter_units-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: meter-units\nVersion: {version}\n")


class _Env(HasStores):
    def __init__(self, instance: dg.DagsterInstance):
        self.instance = instance
        self.settings = Settings.from_env()


@pytest.fixture
def project(tmp_path, monkeypatch):
    folder, site = tmp_path / "project", tmp_path / "venv" / "site-packages"
    (folder / PACKAGE / "queries").mkdir(parents=True)
    (folder / PACKAGE / "__init__.py").write_text("")
    (folder / PACKAGE / "definitions.py").write_text(DEFINITIONS)
    (folder / PACKAGE / "queries" / "daily_usage.sql").write_text(QUERY)
    _meter_units(site, "1.0")
    home = folder / ".dagster_home"
    fresh_home(home, monkeypatch)
    monkeypatch.delenv("BACKFILL_CODE_VERSION")  # computed, as in a deployment
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(folder), str(site)]))
    monkeypatch.chdir(folder)
    for path in (folder, site):
        monkeypatch.syspath_prepend(str(path))
    module = importlib.import_module(MODULE)
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        yield folder, site, module.defs, _Env(instance)
    for name in [n for n in sys.modules if n.split(".")[0] in (PACKAGE, "meter_units")]:
        del sys.modules[name]
    dispose_all()


def _cli_in_new_process(folder: Path, *args: str) -> dict:
    """``backfill-assets -m MODULE ... --json`` in a process of its own: the code version it computes is its own."""
    cli = Path(sys.executable).parent / "backfill-assets"
    result = subprocess.run([str(cli), "-m", MODULE, *args, "--json"], cwd=folder, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def _edit(what: str, folder: Path, site: Path) -> None:
    if what == "transform module":
        (folder / PACKAGE / "definitions.py").write_text(DEFINITIONS + "# a changed transform\n")
    elif what == "SQL template":
        (folder / PACKAGE / "queries" / "daily_usage.sql").write_text(QUERY.replace("12000", "12500"))
    else:
        _meter_units(site, "1.1")


@pytest.mark.parametrize("what", ["transform module", "SQL template", "imported distribution"])
def test_a_changed_template_or_dependency_blocks_an_open_request_as_a_changed_module_does(project, what):
    folder, site, defs, env = project
    created = _cli_in_new_process(folder, "request", "create", "--assets", "daily_usage", "--from", DAY, "--to", DAY,
                                  "--reason", "recompute")
    frozen, request_id = created["code_version"], created["request_id"]
    # Control: another process (this test's, with pytest's modules loaded) finds the same inputs, the same version.
    assert backfills_for_instance(defs, env.instance, env.catalog).code_version() == frozen

    _edit(what, folder, site)
    loaded = _cli_in_new_process(folder, "request", "create", "--assets", "daily_usage", "--from", DAY, "--to", DAY,
                                 "--dry-run")["code_version"]
    assert loaded != frozen

    # The driver sensor's own step, given the version the restarted code server loaded.
    record = Ledger(env.catalog).get(request_id)
    assert drive_request(graph_of(defs), env.instance, env.catalog, record, loaded) == []
    blocked = Ledger(env.catalog).get(request_id)
    assert blocked.status == M.BLOCKED
    assert f"code version changed (frozen {frozen}, loaded {loaded})" in blocked.row["message"]
    changed = "installed distributions it imports" if what == "imported distribution" else "code location's files"
    assert f": the {changed} changed" in blocked.row["message"]
    assert env.instance.get_runs() == []
