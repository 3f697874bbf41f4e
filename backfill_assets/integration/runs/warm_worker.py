"""The warm run worker: a process that has imported Dagster and one code location, and forks a run worker per run.

Started by ``WarmRunLauncher`` (``warm_launcher.py``) as ``python -m backfill_assets.integration.runs.warm_worker``
with the code location's interpreter and working directory; it talks to its launcher over stdin/stdout, one JSON
object per line:

    launcher → worker   {"origin": <serialized RepositoryPythonOrigin>, "instance_ref": <serialized InstanceRef>}
    worker → launcher   {"ready": true, "pid": …, "fingerprint": …}
                        or  {"ready": false, "error": …}
    launcher → worker   {"op": "run", "run_id": …, "execute_run_args": <serialized ExecuteRunArgs>, "instance_ref": …,
                         "home": <the instance's root directory>}
    worker → launcher   {"pid": <child pid>, "start_ticks": …}  or  {"stale": <why>} (then the worker exits)

When its run ends, a forked child touches the wake-up file of ``home`` (``engine/store/wakeup.py``): the daemon
learns of the finished run within one stat of the file, without querying Dagster's run storage for it.

Why a separate process rather than forking the daemon: the daemon holds gRPC channels, SQLAlchemy engines,
threads and locks, none of which survive a fork. This process holds none of them: it imports, it never opens an
instance (the preload only imports the storage classes the instance ref names), and it runs no thread — a forked
child starts with exactly one thread and creates its own instance from the ref, as ``dagster api execute_run`` does.

A run is handed to a *spare*: a child forked ahead of time that has already opened its own instance from the ref
and waits on a pipe for its run's arguments; the worker then forks the next spare. So opening the instance (the
largest part of a child's start) happens before the run is asked for.

Stale code is never run: the worker remembers the size and mtime of every source file it imported from outside the
interpreter's own prefixes (the code location, the project's packages, editable installs) and checks them before
every fork; one changed file makes it answer ``stale`` and exit, and the launcher starts a fresh worker.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from backfill_assets.engine.store.wakeup import wake_daemon
from backfill_assets.integration.runs.code_files import files_digest
from backfill_assets.process_gc import collect_less_often, freeze_long_lived_objects


def _interpreter_prefixes() -> tuple[str, ...]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(str(Path(p).resolve()) + os.sep for p in paths)


def source_files() -> dict[str, tuple[int, int]]:
    """Path → (mtime_ns, size) of every imported module's source outside the interpreter's prefixes."""
    prefixes = _interpreter_prefixes()
    files: dict[str, tuple[int, int]] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        resolved = str(Path(path).resolve())
        if resolved.startswith(prefixes):
            continue
        try:
            stat = os.stat(resolved)
        except OSError:
            continue
        files[resolved] = (stat.st_mtime_ns, stat.st_size)
    return files


def changed_file(files: dict[str, tuple[int, int]]) -> str | None:
    """The first imported source file that changed (or vanished) since it was imported, or None."""
    for path, seen in files.items():
        try:
            stat = os.stat(path)
        except OSError:
            return path
        if (stat.st_mtime_ns, stat.st_size) != seen:
            return path
    return None


def start_ticks(pid: int) -> str:
    """The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat): with the pid it names
    one process, even after the pid is reused. Empty where /proc is not available."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def preload(origin_json: str, instance_ref_json: str) -> None:
    import dagster as dg

    from backfill_assets.engine.tables.iceberg_table import SYNC_MODULES
    from backfill_assets.integration.runs.dagster_adapter import (
        preload_run_worker_modules,
        reconstruct_repository,
        storage_modules_of,
    )

    preload_run_worker_modules()
    for name in storage_modules_of(dg.deserialize_value(instance_ref_json)):
        importlib.import_module(name)
    # Every gated step syncs its published tables as its last act: each forked run would import pyiceberg itself.
    for name in SYNC_MODULES:
        importlib.import_module(name)
    repository = reconstruct_repository(dg.deserialize_value(origin_json))
    for job_name in repository.job_names:  # builds (and caches) every job, as a run worker would one
        repository.get_job(job_name)


def _send(out, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def _become_run_worker(stdout_fd: int) -> None:
    """In a forked child: the signals a run worker expects, and none of the worker's protocol pipe."""
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, stdout_fd)  # the protocol pipe is the worker's, never the run's
    os.close(devnull)


def _exit_child(run: Callable[[], None]) -> None:
    code = 0
    try:
        run()
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # the run's own failures are in its event log; this is a crash of the worker itself
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code)  # never run the parent's atexit handlers or flush its buffers twice


def _join_run_end_ticks() -> None:
    """The run's own driver tick (``run_end_tick.py``), which the child's ``os._exit`` would cut short; a run that
    started none never imported the module."""
    module = sys.modules.get("backfill_assets.integration.runs.run_end_tick")
    if module is not None:
        module.join_run_end_ticks()


def _read_line(fd: int) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 65536)
        if not chunk:
            return b""
        data += chunk
    return data


def _spare_child(read_fd: int, instance_ref_json: str, stdout_fd: int) -> None:
    """A run worker forked ahead of its run: it opens its instance now, then waits for the run's arguments (or
    for its pipe to close: the worker is gone or replaced it). Opening the instance is most of what a forked
    child does before its run starts, so it is off the run's critical path."""

    def run() -> None:
        _become_run_worker(stdout_fd)
        # Until its run arrives, Ctrl-C in the daemon's terminal (it reaches the whole process group) is not for
        # this spare: the worker ends it by closing its pipe. Taken here, it was a traceback in the daemon's log.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from backfill_assets.integration.runs.dagster_adapter import execute_run_on, instance_from_ref

        instance = instance_from_ref(instance_ref_json)
        line = _read_line(read_fd)
        if not line:
            raise SystemExit(0)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # its run takes Ctrl-C as a launched run does
        message = json.loads(line)
        try:
            execute_run_on(instance, message["execute_run_args"])
        finally:
            _join_run_end_ticks()
            wake_daemon(message.get("home"))

    _exit_child(run)


def _run_child(execute_run_args_json: str, home: str | None, stdout_fd: int) -> None:
    """In a forked child: become a run worker exactly as ``dagster api execute_run`` would be, then exit."""

    def run() -> None:
        _become_run_worker(stdout_fd)
        from backfill_assets.integration.runs.dagster_adapter import execute_run

        try:
            execute_run(execute_run_args_json)
        finally:
            _join_run_end_ticks()
            wake_daemon(home)

    _exit_child(run)


@dataclass
class Spare:
    pid: int
    write_fd: int

    def hand(self, message: dict[str, Any]) -> None:
        os.write(self.write_fd, (json.dumps(message) + "\n").encode())
        os.close(self.write_fd)

    def discard(self) -> None:
        os.close(self.write_fd)  # it reads EOF and exits


def _fork_spare(instance_ref_json: str, stdout_fd: int) -> Spare:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write_fd)
        _spare_child(read_fd, instance_ref_json, stdout_fd)
    os.close(read_fd)
    return Spare(pid, write_fd)


def serve(lines, out) -> int:
    hello = json.loads(lines.readline() or "{}")
    try:
        preload(hello["origin"], hello["instance_ref"])
    except BaseException as error:  # noqa: BLE001 — reported to the launcher, which falls back
        _send(out, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        return 1
    freeze_long_lived_objects()  # before the first fork: the children share these pages and never collect them
    files = source_files()
    print_ = files_digest(files)
    instance_ref = hello["instance_ref"]
    spare = _fork_spare(instance_ref, out.fileno())
    _send(out, {"ready": True, "pid": os.getpid(), "fingerprint": print_})
    try:
        for line in lines:
            message = json.loads(line)
            op = message.get("op")
            if op == "run":
                changed = changed_file(files)
                if changed is not None:
                    _send(out, {"stale": f"{changed} changed since this worker imported it"})
                    return 0
                if message.get("instance_ref", instance_ref) == instance_ref:
                    child = spare.pid
                    spare.hand(message)
                else:  # another instance than the spare opened: a child of its own
                    child = os.fork()
                    if child == 0:
                        _run_child(message["execute_run_args"], message.get("home"), out.fileno())
                    spare.discard()
                    instance_ref = message["instance_ref"]
                spare = _fork_spare(instance_ref, out.fileno())
                _send(out, {"pid": child, "start_ticks": start_ticks(child), "fingerprint": print_})
            else:
                _send(out, {"error": f"unknown op {op!r}"})
    finally:
        spare.discard()
    return 0  # the launcher closed the pipe: its process is gone or disposed of the worker


def main() -> int:
    collect_less_often()  # before the preload's imports; forked runs inherit it
    # Children are reaped by the kernel (a run's status lives in Dagster, not in its exit code), so a finished run
    # never lingers as a zombie that the health check would take for alive.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # Ctrl-C in the daemon's terminal reaches its whole process group, this worker included: the daemon handles
    # it, and this worker ends when its stdin closes. (Forked runs take it as the default launcher's runs do.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return serve(sys.stdin, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
