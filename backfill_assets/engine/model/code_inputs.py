"""What a code location's code version covers besides this library's own code (``settings.code_version``).

Found from the code location's source alone, so every process that loads it (the CLI freezing a request, the daemon
driving it, the run computing it) finds the same inputs and the same version:

- the files of the top-level packages its transforms, fingerprints and deliveries come from: their modules and the
  data files beside them (SQL, YAML, templates, JSON, …), caches, hidden folders and databases left out;
- the same for every first-party package those modules import (on disk, but outside site-packages, the standard
  library and this library), followed through that package's own imports;
- the name and version of every installed distribution those modules import (pandas, pyarrow, polars, …), Dagster's
  own excepted: it orchestrates the computation, and a Dagster upgrade blocking every open request is noise;
- what the code location names itself (``CodeInputs``), and minus what it leaves out.

Imports are read from the source, never from ``sys.modules``: what one process happened to import (a test
module, a CLI helper) must not make its version differ from another's. What is read is bounded (``MAX_FILES``,
``MAX_BYTES``); past the bound the version is refused, loudly, rather than quietly covering less.
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.metadata as metadata
import importlib.util
import os
import re
import sys
import sysconfig
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from backfill_assets.engine.model.errors import InvalidInput

LIBRARY_DIR = Path(__file__).resolve().parents[2]  # backfill_assets/: the git-/pkg- part of the version covers it

# Reading more than this is a data folder inside a package, not code: refused, naming the biggest files.
MAX_FILES = 5_000
MAX_BYTES = 64 * 1024 * 1024
# Written at run time or by tools, never read as code: digesting them would give each process its own version.
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".db", ".sqlite", ".sqlite3", ".db-journal", ".db-wal", ".db-shm", ".log")
# ``from a.b import c`` / ``import a.b as x, c`` starting a line or after ``try:``, ``;`` (nothing quoted before it);
# ``import_module("a.b")``, ``__import__("a")``.
_IMPORT = re.compile(
    r"^(?:[^\n#'\"]*?[:;])?[ \t]*(?:from[ \t]+([A-Za-z_][\w.]*)[ \t]+import\b|import[ \t]+([\w. \t,]+))", re.M
)
_DYNAMIC_IMPORT = re.compile(r"""\b(?:import_module|__import__)\(\s*["']([A-Za-z_][\w.]*)["']""")
# The distributions of this family orchestrate; name one in ``CodeInputs.distributions`` to cover it anyway.
ORCHESTRATION = re.compile(r"^dagster([-_.].*)?$")


@dataclass(frozen=True)
class CodeInputs:
    """What a code location adds to, or leaves out of, what its code version covers
    (``backfill_definitions(code_inputs=CodeInputs(...))``).

    ``paths``: absolute files or folders the transforms read that are not in a package they come from or import
    (e.g. ``Path(__file__).parent.parent / "sql"``). ``distributions``: installed distributions they depend on
    without importing them (numpy under pandas). ``ignore_paths``: glob patterns of files left out, matched against
    the file as the version lists it (``my_pkg/fixtures/*.parquet``). ``ignore_distributions``: names left out."""

    paths: tuple[str, ...] = ()
    distributions: tuple[str, ...] = ()
    ignore_paths: tuple[str, ...] = ()
    ignore_distributions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("paths", "distributions", "ignore_paths", "ignore_distributions"):
            value = getattr(self, name)
            if isinstance(value, (str, os.PathLike)) or not all(isinstance(v, (str, os.PathLike)) for v in value):
                raise InvalidInput(f"CodeInputs.{name} must be a list of names or paths, not {value!r}")
            object.__setattr__(self, name, tuple(str(v) for v in value))
        for path in self.paths:
            # A relative path would resolve against each process's working directory: two processes, two versions.
            if not Path(path).is_absolute() or not Path(path).exists():
                raise InvalidInput(f"CodeInputs.paths: {path!r} must be an existing absolute path, e.g. "
                                   "Path(__file__).parent / 'queries'")
        for name in self.distributions:
            if _version_of(name) is None:
                raise InvalidInput(f"CodeInputs.distributions: {name!r} is not an installed distribution")


@dataclass(frozen=True)
class CodeSources:
    """What one code location's code version covers: ``files`` as (name, absolute path) — the name is the file's
    path from its package's parent (``my_pkg/queries/daily.sql``), the same on every host — and ``distributions``
    as (name, version); both sorted."""

    files: tuple[tuple[str, str], ...] = ()
    distributions: tuple[tuple[str, str], ...] = ()

    def files_digest(self) -> str:
        return _files_digest(self.files)

    def distributions_digest(self) -> str:
        lines = "".join(f"{name}=={version}\n" for name, version in self.distributions)
        return hashlib.sha256(lines.encode()).hexdigest()[:8]


def find_code_sources(
    modules: Iterable[str], inputs: CodeInputs | None = None, library_dir: Path = LIBRARY_DIR,
    module_files: Mapping[str, str | None] | None = None,
) -> CodeSources:
    """The files and distributions of the code location whose callables come from ``modules`` (module names).
    ``module_files``: each module's file when the modules are not imported in this process (a graph snapshot's)."""
    inputs = inputs or CodeInputs()
    walk = _Walk(library_dir)
    for name in sorted(set(modules)):
        own = (module_files or {}).get(name) or getattr(sys.modules.get(name), "__file__", None)
        if own and _is_under(Path(own), library_dir):
            walk.imported.update(_imports(own))  # this library's example: only the imports of its own module
        else:
            walk.add_top(name.split(".")[0])
    for path in inputs.paths:
        walk.add_files(Path(path).name, Path(path))
    walk.follow()
    files = {label: path for label, path in walk.files.items() if not _matches(label, inputs.ignore_paths)}
    _check_bounds(files)
    dists = {**walk.distributions, **{name: _version_of(name) or "" for name in inputs.distributions}}
    canonical_ignored = {_canonical(n) for n in inputs.ignore_distributions}
    kept = {_canonical(n): v for n, v in dists.items() if _canonical(n) not in canonical_ignored}
    return CodeSources(tuple(sorted(files.items())), tuple(sorted(kept.items())))


class _Walk:
    """First-party packages and the distributions reached from the code location's packages through imports."""

    def __init__(self, library_dir: Path):
        self.library_dir = library_dir
        self.files: dict[str, str] = {}
        self.distributions: dict[str, str] = {}
        self.imported: set[str] = set()
        self._tops: set[str] = set()

    def add_top(self, top: str) -> None:
        """A first-party top-level module or package: its files, and the imports of its modules."""
        if top in self._tops:
            return
        self._tops.add(top)
        for location in _locations(top):
            if _is_under(location, self.library_dir):
                continue
            if location.is_dir():
                self.add_files(top, location)
            elif location.suffix == ".py":
                self.add_files(location.name, location)

    def add_files(self, label: str, path: Path) -> None:
        for name, file in _listed(label, path):
            self.files.setdefault(name, str(file))
            if file.suffix == ".py":
                self.imported.update(_imports(str(file)))

    def follow(self) -> None:
        done: set[str] = set()
        while pending := sorted(self.imported - done - self._tops):
            for top in pending:
                done.add(top)
                kind = _kind(top, self.library_dir)
                if kind == "first-party":
                    self.add_top(top)
                elif kind == "installed":
                    self.distributions.update(_distributions_of(top))


def _listed(label: str, path: Path) -> list[tuple[str, Path]]:
    """``path`` (a file, or a folder walked in sorted order) as (name, file), left out what no code reads."""
    if path.is_file():
        return [(label, path)]
    found: list[tuple[str, Path]] = []
    for folder, dirs, names in os.walk(path):
        here = Path(folder)
        # A virtualenv or an installed copy inside the project is other people's code, covered by its distribution.
        dirs[:] = sorted(d for d in dirs if not (d.startswith(".") or d in SKIPPED_DIRS or d.endswith(
            (".egg-info", ".dist-info")) or (here / d / "pyvenv.cfg").exists()))
        for name in sorted(names):
            if not name.startswith(".") and not name.endswith(SKIPPED_SUFFIXES):
                found.append((f"{label}/{(here / name).relative_to(path).as_posix()}", here / name))
    return found


def _imports(path: str) -> set[str]:
    """Top-level names of the absolute imports in a module's source, at any depth (an import inside a function
    counts), and of ``import_module("x")`` with a literal name. A line scan, not ``ast``: parsing a few hundred
    modules took seconds, and a false hit (an import in a docstring) only covers more, the same in every process."""
    try:
        source = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    names = {m.group(1).split(".")[0] for m in _DYNAMIC_IMPORT.finditer(source)}
    for match in _IMPORT.finditer(source):
        if match.group(1):
            names.add(match.group(1).split(".")[0])
        else:
            names.update(part.split()[0].split(".")[0] for part in match.group(2).split(",") if part.strip())
    return {name for name in names if name.isidentifier()}


def _locations(top: str) -> list[Path]:
    """Where a top-level module lives: a package's folders, or its file; none for a built-in or a missing one."""
    module = sys.modules.get(top)
    if module is not None:
        found = list(getattr(module, "__path__", None) or []) or [getattr(module, "__file__", None)]
    else:
        try:
            spec = importlib.util.find_spec(top)  # a top-level name: imports nothing
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            return []
        found = list(spec.submodule_search_locations or []) or [spec.origin]
    return sorted(Path(p).resolve() for p in found if p and p not in ("built-in", "frozen"))


def _kind(top: str, library_dir: Path) -> str:
    """``first-party`` (on disk, ours to digest), ``installed`` (a distribution's version says it), or ``other``
    (the standard library, this library, a built-in, or not importable here)."""
    if top in sys.stdlib_module_names or top in sys.builtin_module_names or top == "__future__":
        return "other"
    locations = _locations(top)
    if not locations or any(_is_under(p, library_dir) for p in locations):
        return "other"
    if any(_is_installed(p) for p in locations):
        return "installed"
    if any(_is_under(p, d) for p in locations for d in _stdlib_dirs()):
        return "other"
    return "first-party"


def _is_installed(path: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.parts) or any(
        _is_under(path, d) for d in _site_dirs())


@lru_cache(maxsize=1)
def _site_dirs() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    return tuple(Path(paths[k]).resolve() for k in ("purelib", "platlib") if k in paths)


@lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    return tuple(Path(paths[k]).resolve() for k in ("stdlib", "platstdlib") if k in paths)


def _distributions_of(top: str) -> dict[str, str]:
    """The distribution(s) providing an installed top-level module, by name → version, orchestration left out.
    Most are named as their module (pandas, numpy): one metadata read. Otherwise (yaml is PyYAML's) the installed
    distributions' file lists are read, once per process (~130 ms with 200 distributions)."""
    providers = [top] if _provides(top) else _providers().get(top, [])
    found = {_canonical(name): _version_of(name) or "" for name in providers}
    return {name: v for name, v in found.items() if not ORCHESTRATION.match(name)}


def _provides(top: str) -> bool:
    """Whether the distribution named as the module provides it (its top_level.txt, when it has one, says)."""
    try:
        listed = metadata.distribution(top).read_text("top_level.txt")
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return listed is None or top in listed.split()


@lru_cache(maxsize=1)
def _providers() -> dict[str, list[str]]:
    return {top: sorted(set(names)) for top, names in metadata.packages_distributions().items()}


@lru_cache(maxsize=256)
def _version_of(name: str) -> str | None:
    try:
        return metadata.version(name)
    except (metadata.PackageNotFoundError, ValueError):
        return None


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _is_under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _matches(label: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(label, pattern) for pattern in patterns)


def _check_bounds(files: dict[str, str]) -> None:
    sizes = {label: _size(path) for label, path in files.items()}
    total = sum(sizes.values())
    if len(sizes) <= MAX_FILES and total <= MAX_BYTES:
        return
    biggest = sorted(sizes, key=lambda label: (-sizes[label], label))[:3]
    raise InvalidInput(
        f"the code version would read {len(sizes)} files ({total / 2**20:.0f} MiB), more than {MAX_FILES} files or "
        f"{MAX_BYTES // 2**20} MiB: the biggest are {', '.join(f'{b} ({sizes[b] / 2**20:.1f} MiB)' for b in biggest)}; "
        "move data out of the package, leave it out with backfill_definitions(code_inputs=CodeInputs(ignore_paths="
        "[...])), or set BACKFILL_CODE_VERSION")


def _size(path: str) -> int:
    try:
        return Path(path).stat().st_size
    except OSError:
        return 0


@lru_cache(maxsize=8)
def _files_digest(files: tuple[tuple[str, str], ...]) -> str:
    # Once per process, like the package's own version: the code this process loaded, not later edits on disk.
    h = hashlib.sha256()
    for label, path in files:
        try:
            data = Path(path).read_bytes()
        except OSError:
            data = b""  # gone since it was listed: its name still counts
        h.update(f"{label}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:8]


CHANGED_PARTS = (("", "this library's code"), ("loc-", "the code location's files"),
                 ("deps-", "the installed distributions it imports"))


def changed_parts(frozen: str, loaded: str) -> list[str]:
    """What differs between two code versions this library computed (``git-…+loc-…+deps-…``), in words; empty when
    either was set by hand (``BACKFILL_CODE_VERSION``) and so says nothing of its parts."""
    if not all(v.startswith(("git-", "pkg-")) for v in (frozen, loaded)):
        return []
    a, b = _parts(frozen), _parts(loaded)
    return [words for prefix, words in CHANGED_PARTS if a.get(prefix) != b.get(prefix)]


def _parts(version: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for piece in version.split("+"):
        prefix = next((p for p, _ in CHANGED_PARTS[1:] if piece.startswith(p)), "")
        parts[prefix] = f"{parts[prefix]}+{piece}" if prefix in parts else piece
    return parts
