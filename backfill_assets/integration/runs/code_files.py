"""The files a code location's code is read from, and one fingerprint of them: has its code changed?

``backfill-assets-daemon`` reloads its workspace (a new code server per location, the code imported again) only when
this fingerprint moved, where Dagster's daemon does so every minute whatever happened (``workspace_reload.py``).
The files are those under the location's working directory and its top-level package or file, with the
extensions code is read from (a package installed in editable mode is found through its finder, as Python imports
it); a location whose package cannot be found from here yields no fingerprint, and the daemon then reloads it as
Dagster does.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

# What definitions are read from: Python, dg component and project files, SQL a transform reads, and the .env
# that ``dagster dev`` loads. Data files are left out: a run writing its output under the project would otherwise
# make every check a reload.
CODE_SUFFIXES = frozenset({".py", ".pyi", ".yaml", ".yml", ".toml", ".sql", ".cfg", ".ini"})
CODE_NAMES = frozenset({".env"})
# Directories that hold no code of the location's own: virtualenvs (found by pyvenv.cfg), caches, dependencies.
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "dist-packages", "build", "dist"})
# Past this many files the fingerprint costs more than it saves: the location is reloaded as Dagster does.
MAX_FILES = 20_000


@dataclass(frozen=True)
class CodeTarget:
    """Where a code location's code comes from (the fields of Dagster's loadable target origin)."""

    python_file: str | None = None
    module_name: str | None = None
    package_name: str | None = None
    working_directory: str | None = None
    executable_path: str | None = None


def code_roots(target: CodeTarget) -> list[Path] | None:
    """The files and folders the target's code is read from, or None when they cannot be told from here."""
    if target.executable_path and Path(target.executable_path).resolve() != Path(sys.executable).resolve():
        return None  # another interpreter: its packages are not ours to find
    roots: list[Path] = []
    if target.working_directory:
        roots.append(Path(target.working_directory))
    if target.python_file:
        roots.append(Path(target.python_file).parent)
    for dotted in (target.module_name, target.package_name):
        if dotted:
            found = _package_root(dotted.split(".")[0], target.working_directory)
            if found is None:
                return None
            roots.append(found)
    return sorted({root.resolve() for root in roots}) or None


def _package_root(top_level: str, working_directory: str | None) -> Path | None:
    """The folder of a top-level package (or the file of a top-level module), found without importing it."""
    search = ([working_directory] if working_directory else []) + [os.getcwd(), *sys.path]
    spec = importlib.machinery.PathFinder.find_spec(top_level, search) or _meta_path_spec(top_level)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin) if spec.origin else None


def _meta_path_spec(top_level: str) -> importlib.machinery.ModuleSpec | None:
    """A package only a finder on ``sys.meta_path`` knows: an editable install (``pip install -e .``), whose
    finder maps the name to the project's folder without putting it on ``sys.path``. Without this, the package of
    every project developed that way could not be watched, and its code server was replaced every minute. A
    top-level name's spec is found without importing anything."""
    try:
        return importlib.util.find_spec(top_level)
    except (ImportError, ValueError):  # ValueError: a module in sys.modules without a spec
        return None


def fingerprint(roots: list[Path]) -> str | None:
    """One digest of the path, size and mtime of every code file under ``roots``; None past ``MAX_FILES``."""
    files: dict[str, tuple[int, int]] = {}
    for path, stat in _code_files(roots):
        if path not in files and len(files) == MAX_FILES:
            return None
        files[path] = (stat.st_mtime_ns, stat.st_size)
    return f"{len(files)}:{files_digest(files)}"


def files_digest(files: dict[str, tuple[int, int]]) -> str:
    """A short digest of path → (mtime_ns, size): the daemon's reload check and the warm run worker's staleness."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path}\0{files[path][0]}\0{files[path][1]}\n".encode())
    return digest.hexdigest()[:12]


def _code_files(roots: list[Path]) -> Iterator[tuple[str, os.stat_result]]:
    """Every code file under ``roots`` (a root inside another is walked twice: the caller keys them by path)."""
    for root in roots:
        if root.is_file():
            yield str(root), root.stat()
        else:
            yield from _walk(root)


def _walk(folder: Path) -> Iterator[tuple[str, os.stat_result]]:
    try:
        scanned = list(os.scandir(folder))
    except OSError:
        return
    if any(entry.name == "pyvenv.cfg" for entry in scanned):
        return  # a virtualenv inside the project
    for entry in scanned:
        try:
            if entry.is_dir(follow_symlinks=False):
                if not entry.name.startswith(".") and entry.name not in SKIPPED_DIRS:
                    yield from _walk(Path(entry.path))
            elif entry.name in CODE_NAMES or os.path.splitext(entry.name)[1] in CODE_SUFFIXES:
                yield entry.path, entry.stat()
        except OSError:
            continue  # removed while scanned: the next check sees the folder as it is then
