"""Long-running processes a contender needs (daemons, webservers, schedulers), started and always stopped.

Each service gets its own session (``start_new_session``) so that stopping it also ends the workers it spawned,
by process group, never by name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Mapping, Sequence

STOP_TIMEOUT_S = 30.0


class ServiceFailed(RuntimeError):
    pass


@contextmanager
def service(
    name: str, argv: Sequence[str], env: Mapping[str, str], log_dir: Path, cwd: Path | None = None
) -> Iterator[subprocess.Popen]:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            list(argv), stdout=log, stderr=subprocess.STDOUT, env=dict(env), cwd=cwd, start_new_session=True
        )
        proc.log_path = log_path  # type: ignore[attr-defined]
        try:
            yield proc
        finally:
            stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the service (it shuts its children down), then SIGKILL whatever is left in its process group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def wait_until(
    ready: Callable[[], bool], what: str, timeout: float, services: Sequence[subprocess.Popen] = (), poll: float = 0.2
) -> float:
    """Poll ``ready`` until true; fail early (with the log tail) if one of ``services`` died. Returns seconds."""
    started = time.monotonic()
    while True:
        for proc in services:
            if proc.poll() is not None:
                raise ServiceFailed(f"{what}: a service exited with {proc.returncode}\n{tail(proc)}")
        try:
            if ready():
                return time.monotonic() - started
        except Exception:  # noqa: BLE001 - not ready yet (connection refused, table missing, ...)
            pass
        if time.monotonic() - started > timeout:
            logs = "\n".join(tail(p) for p in services)
            raise ServiceFailed(f"{what}: not ready after {timeout:.0f} s\n{logs}")
        time.sleep(poll)


def tail(proc: subprocess.Popen, lines: int = 40) -> str:
    path = getattr(proc, "log_path", None)
    if path is None or not Path(path).exists():
        return ""
    text = Path(path).read_text(errors="replace").splitlines()
    return f"--- {path} ---\n" + "\n".join(text[-lines:])

