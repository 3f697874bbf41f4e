"""A hint to the backfill daemon that there is new work: a request made, resumed or confirmed, a cascade queued.

The daemon (``backfill-assets-daemon``) watches this file's modification time beside Dagster's own records and
runs its sensor loop at once when it changes, instead of at the next 5 s pass. It is only a hint: a lost or
late one costs one timer period, never a decision (the ledger is the truth, the sensor tick stays the backstop).
The file lives in the Dagster home, which the daemon and every process of one machine share; a process on
another host that cannot reach it waits for the timer. The daemon creates it when it starts; the other processes
only touch it, so a command run where no daemon ever ran leaves no file behind.
"""

from __future__ import annotations

import os
from pathlib import Path

WAKEUP_FILE = ".backfill_wakeup"


def wakeup_path(home: Path | str) -> Path:
    return Path(home) / WAKEUP_FILE


def wake_daemon(home: Path | str | None) -> None:
    """Touch the wake-up file of ``home`` if a daemon made one (otherwise, or on a read-only home, nothing: a daemon
    started later passes over everything when it starts, and the timer still runs)."""
    if home is None:
        return
    try:
        os.utime(wakeup_path(home))
    except OSError:
        pass


def create_wakeup_file(home: Path | str) -> None:
    """The daemon's side: make the file the other processes touch."""
    try:
        wakeup_path(home).touch(exist_ok=True)
    except OSError:
        pass


def wakeup_stamp(home: Path | str) -> int:
    """The wake-up file's modification time (ns); 0 when it does not exist."""
    try:
        return wakeup_path(home).stat().st_mtime_ns
    except OSError:
        return 0
