"""Test-only crash points. Inert unless ``BACKFILL_FAULT`` names the boundary being crossed.

A named boundary kills the current process with SIGKILL — no cleanup, no finally blocks, exactly like an OOM
kill or a lost machine — so tests can prove that a crash at any step leaves readers on a complete version.
"""

from __future__ import annotations

import os
import signal

ENV_FAULT = "BACKFILL_FAULT"

AFTER_DATA_FILE = "after_data_file"
AFTER_MANIFEST = "after_manifest"
AFTER_VERIFYING = "after_verifying"
IN_PUBLISH_TRANSACTION = "in_publish_transaction"
AFTER_PUBLISH_COMMIT = "after_publish_commit"
AFTER_EVENT = "after_event"
BOUNDARIES = (
    AFTER_DATA_FILE,
    AFTER_MANIFEST,
    AFTER_VERIFYING,
    IN_PUBLISH_TRANSACTION,
    AFTER_PUBLISH_COMMIT,
    AFTER_EVENT,
)


def fault_point(name: str) -> None:
    if os.environ.get(ENV_FAULT) == name:
        os.kill(os.getpid(), signal.SIGKILL)
