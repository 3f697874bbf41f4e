"""The repository paths the docs name (``tests/engine/test_states.py``, ``engine/wap/gate.Gate``: a module and a name
it defines), and whether each exists; ``test_docs_commands.py`` holds the docs to them."""

from __future__ import annotations

import re

from tests.doors.shown_commands import DOCS, ROOT

PATH = re.compile(
    r"(?<![\w/.-])((?:backfill_assets|tests|bench|deploy|scripts|docs|engine|integration|service|cli|lineage|scaffold"
    r"|examples)/[\w./*+-]*[\w*])"
)
SAVE_AS = re.compile(r"<!-- save-as: (\S+) -->")
_DEFINITION = r"^\s*(?:def|class|async def)\s+{name}\b|^\s*{name}\s*[:=]"


def named_paths() -> list[tuple[str, str]]:
    """(path:line, the path) of every repository path a doc names (``engine/...`` is under backfill_assets/)."""
    found = []
    for path in DOCS:
        text = (ROOT / path).read_text(encoding="utf-8")
        users_files = set(SAVE_AS.findall(text))  # files the reader writes in a project of their own
        for number, line in enumerate(text.splitlines(), 1):
            found += [(f"{path}:{number}", p.rstrip(".")) for p in PATH.findall(line) if p not in users_files]
    return found


def path_exists(named: str) -> bool:
    for base in (ROOT, ROOT / "backfill_assets"):
        if any(ch in named for ch in "*<") and list(base.glob(named)):
            return True
        if (base / named).exists() or (base / f"{named}.py").exists():
            return True
        # engine/store/catalog.Catalog.publish: a module and a name defined in it
        module, _, names = named.partition(".")
        source = base / f"{module}.py"
        if names and source.exists():
            defined = source.read_text(encoding="utf-8")
            if all(re.search(_DEFINITION.format(name=re.escape(n)), defined, re.M) for n in names.split(".")):
                return True
    return False
