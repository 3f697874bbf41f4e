"""docs/CLI_REFERENCE.md is what scripts/cli_reference.py renders from the commands' own ``--help``, and the
rendering depends on nothing around it: not the terminal's width, the folder, the user or the instance."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cli_reference.py"
REFERENCE = ROOT / "docs" / "CLI_REFERENCE.md"
STALE = "docs/CLI_REFERENCE.md is stale: run python scripts/cli_reference.py --write"


def _script() -> ModuleType:
    # scripts/ is not a package: load the file itself (a top-level `scripts` module elsewhere cannot shadow it).
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_reference_is_the_rendered_one():
    rendered = _script().render()
    assert rendered == REFERENCE.read_text(encoding="utf-8"), STALE


def test_the_rendering_depends_on_no_terminal_folder_user_or_instance(tmp_path):
    """Another process, in another folder, with a narrow terminal, another user and home, another instance and a
    module that does not exist: the same page, and no instance folder made by rendering it."""
    env = {
        **os.environ,
        "COLUMNS": "40", "LINES": "10", "USER": "someone-else", "LOGNAME": "someone-else", "HOME": str(tmp_path),
        "DAGSTER_HOME": str(tmp_path / "another_home"), "BACKFILL_MODULE": "no_such_module",
    }
    elsewhere = subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert elsewhere == _script().render()
    assert not (tmp_path / ".dagster_home").exists() and not (tmp_path / "another_home").exists()
