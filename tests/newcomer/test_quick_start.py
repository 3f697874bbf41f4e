"""The newcomer's path, as the README's quick start gives it: in an empty folder outside the repository, the
package's wheel installed into a fresh virtualenv (Python 3.12 unless BACKFILL_NEWCOMER_PYTHON names another),
``backfill-assets init``, the README's meters assets, pytest, ``dg``, the daemon, a request, a read, a re-run, a
rollback and ``dg launch`` — every block of the quick start, run by bash as it is written."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme_blocks import ROOT, newcomer_script

pytestmark = [pytest.mark.newcomer, pytest.mark.release, pytest.mark.timeout(900)]
WHEEL_PLACEHOLDER = "path/to/backfill_assets"
PYTHON_PLACEHOLDER = "python3.12"
# What a user's shell holds that would put this checkout (or its instance) in the newcomer's way.
SCRUBBED = ("VIRTUAL_ENV", "PYTHONPATH", "DAGSTER_HOME", "PIP_REQUIRE_VIRTUALENV")


def newcomer_python() -> str:
    chosen = os.environ.get("BACKFILL_NEWCOMER_PYTHON")
    if chosen:
        return chosen
    candidates = [*sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python"))),
                  shutil.which("python3.12")]
    # A pyenv shim is on PATH even where it refuses to run (another global version): take one that runs.
    found = next((c for c in candidates if c and subprocess.run([c, "-c", ""], capture_output=True).returncode == 0),
                 None)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("no Python 3.12 for the newcomer test (set BACKFILL_NEWCOMER_PYTHON)")
        pytest.skip("no Python 3.12 on this machine (set BACKFILL_NEWCOMER_PYTHON)")
    return found


def build_wheel(into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(into), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = into.glob("backfill_assets-*.whl")
    return wheel


def newcomer_env() -> dict[str, str]:
    # HOME stays: pip's cache is a newcomer's too (a second install of the same wheels takes a minute, not three).
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED and not k.startswith("BACKFILL_")}
    constraints = os.environ.get("BACKFILL_NEWCOMER_CONSTRAINTS")
    if constraints:
        env["PIP_CONSTRAINT"] = str(Path(constraints).resolve())
    return env


def test_the_readme_quick_start_runs_in_an_empty_folder(tmp_path):
    python = newcomer_python()
    wheel = build_wheel(tmp_path / "dist")
    folder = tmp_path / "empty"
    folder.mkdir()
    script = newcomer_script({WHEEL_PLACEHOLDER: str(wheel), PYTHON_PLACEHOLDER: python})
    script += 'echo "IMPORTED_FROM=$(python -c "import backfill_assets; print(backfill_assets.__file__)")"\n'
    shell = subprocess.Popen(["bash", "-c", script], cwd=folder, env=newcomer_env(), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = shell.communicate(timeout=840)
    finally:
        _stop_session(shell.pid)
    tail = output[-6000:] + _daemon_log_tail(folder)
    assert shell.returncode == 0, tail
    imported = next(line for line in output.splitlines() if line.startswith("IMPORTED_FROM="))
    assert str(folder / "venv") in imported and str(ROOT) not in imported, imported + "\n" + output[:3000]
    _assert_the_story(output, tail)


def _assert_the_story(output: str, tail: str) -> None:
    """What the README says each step shows."""
    assert "1 passed" in output, tail  # the daylight-saving day's test
    assert "All definitions loaded successfully" in output, tail  # dg check defs
    assert "planned 6 | published 6" in output, tail  # the first load: 3 days x 2 assets
    # read: kWh per meter of the 23-hour day (0.5, 1.0 and 1.5 kWh an hour).
    assert "a,11.5\nb,23.0\nc,34.5" in output, tail
    assert "planned 1 | published 1" in output, tail  # the re-run of one day
    assert "rolled back daily_usage/2024-03-31/" in output and "restored    daily_usage/2024-03-31/" in output, tail
    assert "daily_usage/2024-04-02/" in output and "PUBLISHED" in output, tail  # dg launch, through the gate
    assert "published.daily_usage  in line" in output, tail  # backfill-assets tables
    # DuckDB over the Iceberg table: four days, the 23-hour day's 69 kWh (the rolled-back first load's) among them.
    assert "2024-03-31" in output and "69.0" in output and "2024-04-02" in output, tail


def _stop_session(pid: int) -> None:
    """The script's background daemon (and its code servers) share its session: stop them all."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _daemon_log_tail(folder: Path) -> str:
    log = folder / "my_meters" / "daemon.log"
    return "\n--- daemon.log ---\n" + log.read_text()[-3000:] if log.exists() else ""
