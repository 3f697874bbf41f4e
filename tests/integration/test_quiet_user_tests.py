"""A user's own pytest run of the README's project is quiet: its definitions load, every job and sensor
resolves, and a step runs under ``-W error`` with nothing allow-listed. (The library once caused a BetaWarning
about ``owners`` on a sensor Dagster copied to bind resources, and pydantic's ``__fields__`` deprecation for each
empty Config class.)"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.readme_blocks import saved_files

LOADS = '''
import dagster as dg

from my_meters.definitions import defs


def test_every_job_and_sensor_of_the_definitions_resolves():
    dg.Definitions.validate_loadable(defs)
    repository = defs.get_repository_def()
    assert repository.get_all_jobs() and repository.sensor_defs
'''
# Warnings Dagster emits about its own code, whatever a project does (none today); the library's are never here.
DAGSTER_OWN: tuple[str, ...] = ()


def test_the_readme_project_tests_pass_with_warnings_as_errors(tmp_path):
    for path, code in {**saved_files(), "tests/test_loads.py": LOADS, "my_meters/__init__.py": ""}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILL_", "DAGSTER_", "PYTEST_"))}
    env["PYTHONPATH"] = str(tmp_path)  # the project's package, as its pyproject's pythonpath gives it
    ignored = [arg for filter_ in DAGSTER_OWN for arg in ("-W", filter_)]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", *ignored, "tests"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert ran.returncode == 0 and "2 passed" in ran.stdout, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "warning" not in ran.stdout.lower(), ran.stdout[-4000:]
