"""``backfill-assets init``: a project Dagster's CLI loads and whose own test passes; a second run changes nothing;
an existing dagster.yaml or pyproject.toml is never rewritten and init names exactly what it lacks; bad input is
refused before anything is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.integration import instance_template

FILES = {"pyproject.toml", ".dagster_home/dagster.yaml", "shop/__init__.py", "shop/definitions.py",
         "tests/test_definitions.py", ".gitignore", "README.md"}


def _init(folder: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["init", str(folder), *args, "--json"], catch_exceptions=False)
    return result.exit_code, result.output


def _project_env(folder: Path) -> dict[str, str]:
    """A shell in the project as its README says: its own instance, none of this suite's settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("BACKFILL_")} | {
        "DAGSTER_HOME": str(folder / ".dagster_home")}


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_new_project_loads_in_dagster_and_its_test_passes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "shop"
    code, output = _init(folder, "--timezone", "America/New_York", "--start", "2024-03-01")
    assert code == 0, output
    report = json.loads(output)
    assert {f["path"] for f in report["files"]} == FILES and {f["outcome"] for f in report["files"]} == {"written"}
    assert not (tmp_path / ".dagster_home").exists()  # no stray home where init ran
    assert (folder / ".dagster_home/dagster.yaml").read_text() == instance_template.template_text()
    tool = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]
    assert tool["dagster"]["module_name"] == tool["dg"]["project"]["code_location_target_module"] == "shop.definitions"
    assert 'BusinessCalendar("America/New_York", "2024-03-01")' in (folder / "shop/definitions.py").read_text()

    env = _project_env(folder)
    validated = subprocess.run([dagster_bin("dagster"), "definitions", "validate"], cwd=folder, env=env,
                               capture_output=True, text=True, timeout=180)  # [tool.dagster] names the module
    assert validated.returncode == 0, validated.stdout + validated.stderr
    tested = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=folder, env=env,
                            capture_output=True, text=True, timeout=300)
    assert tested.returncode == 0 and "1 passed" in tested.stdout, tested.stdout[-3000:] + tested.stderr[-2000:]


DRILL = """
from backfill_assets.defects import with_defects

defs = backfill_definitions(assets=with_defects(hourly_example))
"""
DUPLICATE_KEYS = '{"ops": {"hourly_example": {"config": {"defect": "duplicate_keys"}}}}'


def test_dg_launch_goes_through_the_gate(tmp_path):
    """``dg launch --assets … --partition …`` on the project: a day is published with its checks; a day whose audit
    fails exits non-zero and leaves the version it had serving."""
    folder = tmp_path / "shop"
    assert _init(folder, "--start", "2024-03-01")[0] == 0
    definitions = folder / "shop/definitions.py"
    definitions.write_text(definitions.read_text() + DRILL)  # the same asset, given a defect on demand
    env = _project_env(folder)
    launch = [dagster_bin("dg"), "launch", "--assets", "hourly_example", "--partition", "2024-03-02"]

    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([*launch, *extra], cwd=folder, env=env, capture_output=True, text=True, timeout=180)

    assert run().returncode == 0
    versions = [*_versions(folder, env)]
    assert versions == ["PUBLISHED"], versions
    failed = run("--config-json", DUPLICATE_KEYS)
    assert failed.returncode != 0 and "primary_key_unique" in failed.stdout + failed.stderr
    assert [*_versions(folder, env)] == ["PUBLISHED", "REJECTED"]  # the first still current (listed first)


def _versions(folder: Path, env: dict) -> list[str]:
    shown = subprocess.run([dagster_bin("backfill-assets"), "versions", "hourly_example", "2024-03-02", "--json"],
                           cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    return [v["state"] for v in sorted(json.loads(shown.stdout), key=lambda v: not v["current"])]


def test_a_second_run_keeps_every_file(tmp_path):
    folder = tmp_path / "shop"
    assert _init(folder)[0] == 0
    before = _snapshot(folder)
    code, output = _init(folder)
    assert code == 0 and {f["outcome"] for f in json.loads(output)["files"]} == {"kept"}
    assert _snapshot(folder) == before


def test_an_existing_dagster_yaml_is_kept_and_its_missing_limits_named_with_their_text(tmp_path):
    folder = tmp_path / "shop"
    (folder / ".dagster_home").mkdir(parents=True)
    own = yaml.safe_dump({"run_launcher": {"module": "dagster", "class": "DefaultRunLauncher"},
                          "concurrency": {"runs": {"max_concurrent_runs": 4}}, "run_monitoring": {"enabled": True}})
    (folder / ".dagster_home/dagster.yaml").write_text(own)
    code, output = _init(folder)
    assert code == 1
    (instance,) = [f for f in json.loads(output)["files"] if f["path"] == ".dagster_home/dagster.yaml"]
    assert instance["outcome"] == "incomplete"
    advice = instance["advice"]
    # Its concurrency block is its own choice, but one without the lane and per-team limits lets backfills take
    # production's slot and one team take the whole lane: named, with the shipped block to take the entries from.
    assert "has no backfill lane limit (key backfill/lane" in advice and "key: backfill/lane" in advice
    assert "has no per-team limit (key backfill/team" in advice and "key: backfill/team" in advice
    # Its launcher, and the coordinator it does not name, are its own choice: never something it lacks.
    assert "run_coordinator" not in advice and "run_launcher" not in advice and "DefaultRunLauncher" not in advice
    assert (folder / ".dagster_home/dagster.yaml").read_text() == own


@pytest.mark.parametrize("classes", [
    {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}},
    {"run_launcher": {"module": "dagster_k8s", "class": "K8sRunLauncher", "config": {"job_namespace": "etl"}},
     "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator",
                         "config": {"dequeue_interval_seconds": 2}}},
], ids=["dagster's own", "kubernetes"])
def test_a_dagster_yaml_of_other_classes_with_the_limits_is_complete_and_the_accelerators_are_a_note(
    tmp_path, classes
):
    folder = tmp_path / "shop"
    (folder / ".dagster_home").mkdir(parents=True)
    shipped = yaml.safe_load(instance_template.template_text())
    own = yaml.safe_dump({**classes, "concurrency": shipped["concurrency"], "run_monitoring": {"enabled": True}})
    (folder / ".dagster_home/dagster.yaml").write_text(own)
    code, output = _init(folder)
    assert code == 0
    (instance,) = [f for f in json.loads(output)["files"] if f["path"] == ".dagster_home/dagster.yaml"]
    assert instance["outcome"] == "kept"
    note = instance["advice"]
    assert note.startswith("complete; optional accelerators it does not use: WarmRunLauncher (`run_launcher:`)")
    assert "BackfillRunCoordinator (`run_coordinator:`)" in note and "SqliteEventLogReusingEngines" in note
    assert "lack" not in note and "no `" not in note
    text = CliRunner().invoke(cli, ["init", str(folder)], catch_exceptions=False).output
    assert "lacks" not in text and ".dagster_home/dagster.yaml: note: complete; optional accelerators" in text
    assert (folder / ".dagster_home/dagster.yaml").read_text() == own


def test_an_existing_pyproject_is_kept_and_the_tables_it_lacks_named(tmp_path):
    folder = tmp_path / "shop"
    folder.mkdir()
    own = '[project]\nname = "shop"\n\n[tool.dagster]\nmodule_name = "shop.defs"\n'
    (folder / "pyproject.toml").write_text(own)
    code, output = _init(folder)
    assert code == 1
    (pyproject,) = [f for f in json.loads(output)["files"] if f["path"] == "pyproject.toml"]
    assert pyproject["outcome"] == "incomplete" and "[tool.dg]" in pyproject["advice"]
    assert "[tool.dg.project]" in pyproject["advice"] and '[tool.dagster]\n' not in pyproject["advice"]
    assert (folder / "pyproject.toml").read_text() == own
    tomllib.loads(pyproject["advice"].split("Add:\n", 1)[1])  # what it says to add is TOML


@pytest.mark.parametrize("args, words", [
    (["--timezone", "Mars/Olympus"], "unknown timezone 'Mars/Olympus'"),
    (["--start", "2024-13-01"], "not a valid calendar date"),
    (["--module", "../evil"], "is not a lowercase Python identifier"),
    (["--module", "class"], "is not a lowercase Python identifier"),
])
def test_bad_input_is_refused_and_nothing_is_written(tmp_path, args, words):
    folder = tmp_path / "shop"
    result = CliRunner().invoke(cli, ["init", str(folder), *args])
    assert result.exit_code == 2 and words in result.output, result.output
    assert not folder.exists()
