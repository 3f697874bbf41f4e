"""The README's code as the tests take it, byte for byte: the Python blocks it tells a user to save (each after a
``<!-- save-as: PATH -->`` line) and its quick start as one shell script (``<!-- newcomer:start/end -->``)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
ASSETS_DOC = ROOT / "docs" / "ASSETS.md"
SAVE_AS = re.compile(r"<!-- save-as: (\S+) -->\s*```python\n(.*?)```", re.S)
NEWCOMER = re.compile(r"<!-- newcomer:start -->(.*?)<!-- newcomer:end -->", re.S)
BLOCK = re.compile(r"(?:<!-- save-as: (\S+) -->\s*)?```(bash|python)\n(.*?)```", re.S)
DRILL = re.compile(r"## A defect drill.*?```python\n(.*?)```", re.S)


def saved_files(text: str | None = None) -> dict[str, str]:
    """Path -> content of every block the README says to save."""
    return {path: code for path, code in SAVE_AS.findall(text if text is not None else README.read_text())}


def drill_module() -> str:
    found = DRILL.search(ASSETS_DOC.read_text())
    assert found, "docs/ASSETS.md lost its defect drill module"
    return found.group(1)


def newcomer_script(substitutions: dict[str, str]) -> str:
    """The quick start in order: shell blocks as they are, each Python block written to its file (a heredoc), with
    each placeholder of ``substitutions`` (which must appear) replaced."""
    found = NEWCOMER.search(README.read_text())
    assert found, "README lost its quick start markers"
    parts = ["set -euo pipefail"]
    for path, kind, code in BLOCK.findall(found.group(1)):
        if kind == "python":
            assert path, "a Python block of the quick start says where to save it"
            parts.append(f"mkdir -p {shlex.quote(str(Path(path).parent))}\ncat > {shlex.quote(path)} <<'PYTHON_BLOCK'\n"
                         f"{code}PYTHON_BLOCK")
        else:
            parts.append(code)
    script = "\n".join(parts) + "\n"
    for placeholder, value in substitutions.items():
        assert placeholder in script, f"the quick start no longer says {placeholder!r}"
        script = script.replace(placeholder, value)
    return script
