"""What a command needs to freeze a request, kept from the last time the code location was loaded: its asset graph
(``engine/model/graph_snapshot.py``) and the run queue's limits, so that ``request create`` need not import Dagster
and the code location (~1.5 s of a 2 s command).

A snapshot is used only while nothing it was made from can have changed. Its key, computed again before each use:

- the module, the working directory, the interpreter and ``sys.path``;
- the environment, but for a few variables a shell changes on its own (a code location may read any other);
- the content of every first-party module the process had imported once the code location was loaded (this
  library's, the code location's, their packages': anything imported from outside the interpreter's standard
  library and site-packages), so an edit anywhere, a new import included, is a new key. The snapshot records each
  file's digest with its identity on disk (inode, size, modification and change times); a file whose identity is
  unchanged and whose last change came well before the snapshot keeps its digest unread (``_Digests``);
- what is installed: the entries of every site-packages folder on ``sys.path`` (a distribution's folder names its
  version), and of each distribution's metadata folder (``*.dist-info``, ``*.egg-info``) and its ``RECORD`` the
  inode, size and times (stat only, no read): a package reinstalled at the same version (a local project built
  again, non-editable) keeps its folder's name but gets a new folder and ``RECORD``;
- the Dagster home's ``dagster.yaml`` (the run queue's limits come from it).

And the code version is never taken from the snapshot: freezing computes it as a loaded code location does, from
the files themselves (``settings.code_version``), and a snapshot whose code inputs (the files and distributions
the version covers) are no longer what it recorded is stale too. A stale, unreadable or missing snapshot is
simply not used: the command loads the code location, and writes a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfill_assets.engine.model.code_inputs import CodeSources
from backfill_assets.engine.model.concurrency import RunLimit
from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.graph_snapshot import SnapshotGraph, graph_of_record, graph_record
from backfill_assets.engine.plan.creation import QueueLimits

CACHE_DIR = ".backfill_cache"
# Set by a shell or a terminal on its own; a code location reading them at import would be strange.
VOLATILE_ENV = frozenset({"_", "OLDPWD", "PWD", "SHLVL", "COLUMNS", "LINES", "TERM", "TERM_PROGRAM",
                          "TERM_PROGRAM_VERSION", "TERM_SESSION_ID", "WINDOWID", "PS1", "SSH_TTY", "SSH_CLIENT",
                          "SSH_CONNECTION", "STY", "TMUX", "TMUX_PANE"})
# A file changed this close to a snapshot's writing is read again however its identity on disk compares: on a
# filesystem with coarse times (FAT keeps 2 s) an edit made just after the snapshot could keep the identity recorded.
RACY_SECONDS = 3.0
# An installed distribution's metadata folder (wheel and legacy installs).
METADATA_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class LocationSnapshot:
    """A code location as the last load saw it: its graph (no callables) and the run queue's limits."""

    graph: SnapshotGraph
    queue_limits: QueueLimits


def snapshot_path(home: Path, module: str, cwd: Path) -> Path:
    name = hashlib.sha256(f"{module}\0{cwd}".encode()).hexdigest()[:16]
    return home / CACHE_DIR / f"location-{name}.json"


def remember(home: Path, module: str, cwd: Path, graph: AssetGraph, limits: QueueLimits) -> None:
    """Write the snapshot of a code location this process has just loaded (``graph``) and the limits it read.
    Never fails the command: a snapshot not written is a slower next command."""
    try:
        written_at, files = time.time(), _first_party_files()
        stamps = {path: stamp for path in files if (stamp := _stamp(path)) is not None}
        record = {"key": _key(home, module, cwd, files, _Digests(stamps, written_at, trusted=True)), "files": files,
                  "stamps": stamps, "written_at": written_at, "graph": graph_record(graph),
                  "code_sources": _sources_record(graph.code_sources()), "queue_limits": _limits_record(limits)}
        path = snapshot_path(home, module, cwd)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(record, sort_keys=True))
        partial.replace(path)  # atomic: a reader sees the old snapshot or the new one, never half of one
    except (OSError, BackfillError, TypeError, ValueError):
        return


def recall(home: Path, module: str, cwd: Path) -> LocationSnapshot | None:
    """The code location's snapshot if it still describes it (see the module's docstring), else None."""
    try:
        record = json.loads(snapshot_path(home, module, cwd).read_text())
        digests = _Digests(record.get("stamps", {}), record.get("written_at", 0.0))
        if record["key"] != _key(home, module, cwd, record["files"], digests):
            return None
        graph = graph_of_record(record["graph"])
        if _sources_record(graph.code_sources()) != record["code_sources"]:
            return None
        return LocationSnapshot(graph, _limits_of(record["queue_limits"]))
    except (OSError, BackfillError, KeyError, TypeError, ValueError):
        return None


def _key(home: Path, module: str, cwd: Path, files: list[str], digests: _Digests) -> str:
    h = hashlib.sha256()
    environ = sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE_ENV)
    # The import path as loading the code location makes it (``cli/code_location.py`` puts the working directory
    # first when it is missing), so a snapshot written after a load and read before one agree.
    import_path = sys.path if str(cwd) in sys.path else [str(cwd), *sys.path]
    h.update(json.dumps([module, str(cwd), sys.executable, sys.version, import_path, environ]).encode())
    for path in files:
        h.update(path.encode() + b"\0" + digests(path) + b"\0")
    h.update(installed_digest(_site_folders()))
    h.update(_content(home / "dagster.yaml"))
    return h.hexdigest()


def installed_digest(folders: list[str]) -> bytes:
    """What is installed in ``folders`` (site-packages): their entries, and each distribution metadata folder's
    and its ``RECORD``'s identity on disk (see the module's docstring)."""
    h = hashlib.sha256()
    for folder in folders:
        entries = sorted(os.listdir(folder))
        h.update(folder.encode() + b"\0" + "\n".join(entries).encode() + b"\0")
        for entry in entries:
            if entry.endswith(METADATA_SUFFIXES):
                meta = os.path.join(folder, entry)
                h.update(f"{entry}\0{_identity(meta)}\0{_identity(os.path.join(meta, 'RECORD'))}\n".encode())
    return h.digest()


def _identity(path: str) -> str:
    """A file's or folder's identity on disk: written again (a new inode, size or time), it is another."""
    try:
        return _identity_of(os.stat(path))
    except OSError:
        return "missing"


def _identity_of(st: os.stat_result) -> str:
    # The change time too: no tool sets it, so a file written again with its old size and modification time back
    # (``cp -p``, ``rsync -t``, ``touch -d``) is still another.
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def _stamp(path: str) -> list[str] | None:
    """A first-party file's [identity, content digest], read between two stats that agree; None when it changed
    while read (its content is then read again at each use)."""
    before = _identity(path)
    digest = _content(Path(path))
    return [before, digest.hex()] if before != "missing" and _identity(path) == before else None


class _Digests:
    """The content digest of each first-party file for the key: the one the snapshot recorded when the file's
    identity on disk is still the recorded one and its last change came ``RACY_SECONDS`` or more before the snapshot
    was written (git's rule for "racily clean" files); read again otherwise. So a command reads only the files
    changed since, not every file of the project and of an editable install (several hundred in a test process)."""

    def __init__(self, stamps: dict[str, list[str]], written_at: float, trusted: bool = False):
        self._stamps, self._written_at, self._trusted = stamps, written_at, trusted

    def __call__(self, path: str) -> bytes:
        stamp = self._stamps.get(path)
        if stamp is None:
            return _content(Path(path))
        if self._trusted:  # the stamps were taken just now, by this process
            return bytes.fromhex(stamp[1])
        try:
            st = os.stat(path)
        except OSError:
            return b"missing"
        if _identity_of(st) == stamp[0] and max(st.st_mtime, st.st_ctime) <= self._written_at - RACY_SECONDS:
            return bytes.fromhex(stamp[1])
        return _content(Path(path))


def _content(path: Path) -> bytes:
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return b"missing"


def _installed_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {os.path.realpath(paths[name]) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(os.path.realpath(sys.base_prefix))
    return tuple(sorted(roots))


def _first_party_files() -> list[str]:
    """Every module file imported in this process from outside the interpreter's own and installed folders."""
    roots = _installed_roots()
    found = set()
    resolve = _RealPaths()
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py"):
            real = resolve.file(file)
            if not any(real == root or real.startswith(root + os.sep) for root in roots):
                found.add(real)
    return sorted(found)


class _RealPaths:
    """``os.path.realpath`` of many files at once: each folder is resolved once (``realpath`` would look at every
    component of every file's path again, ~25,000 ``lstat`` calls per command with Dagster imported); a file is
    resolved on its own only when it is itself a symbolic link."""

    def __init__(self) -> None:
        self._folders: dict[str, str] = {}

    def file(self, path: str) -> str:
        if os.path.islink(path):
            return os.path.realpath(path)
        folder, name = os.path.split(os.path.abspath(path))
        real_folder = self._folders.get(folder)
        if real_folder is None:
            real_folder = self._folders[folder] = os.path.realpath(folder)
        return os.path.join(real_folder, name)


def _site_folders() -> list[str]:
    installed = {os.path.realpath(p) for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}
    return sorted({os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)} & installed
                  | {p for p in installed if os.path.isdir(p)})


def _sources_record(sources: CodeSources) -> dict[str, Any]:
    return {"files": [list(f) for f in sources.files], "files_digest": sources.files_digest(),
            "distributions": [list(d) for d in sources.distributions]}


def _limits_record(limits: QueueLimits) -> dict[str, Any]:
    return {"max_concurrent_runs": limits.max_concurrent_runs, "source": limits.source,
            "limits": [{"key": t.key, "value": t.value, "per_value": t.per_value, "limit": t.limit}
                       for t in limits.limits]}


def _limits_of(record: dict[str, Any]) -> QueueLimits:
    return QueueLimits(record["max_concurrent_runs"], [RunLimit(**t) for t in record["limits"]], record["source"])
