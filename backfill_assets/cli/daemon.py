"""Starting and stopping a ``dagster-daemon`` for the duration of a command (the demo)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def dagster_bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


@contextmanager
def running_daemon(home: Path, module: str) -> Iterator[subprocess.Popen]:
    """A ``backfill-assets-daemon`` (dagster-daemon, woken by new work) on ``home`` serving the code location
    ``module``; stopped with SIGTERM (its own PID, not a wrapper shell's) on exit."""
    # Not $DAGSTER_HOME/logs: dagster-daemon clears that folder when it starts.
    log_dir = home / "backfill_logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log = (log_dir / "daemon.log").open("ab")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    proc = subprocess.Popen(
        [dagster_bin("backfill-assets-daemon"), "run", "-m", module],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        log.close()
