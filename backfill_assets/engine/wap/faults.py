"""Test-only crash and hold points. Inert unless ``BACKFILL_FAULT`` or ``BACKFILL_HOLD`` names the boundary.

``BACKFILL_FAULT=<boundary>``: crossing it kills the current process with SIGKILL — no cleanup, no finally
blocks, exactly like an OOM kill or a lost machine — so tests can prove that a crash at any step leaves readers
on a complete version.

``BACKFILL_HOLD=<boundary>=<path>``: crossing it waits while the file ``<path>`` exists (at most
``HOLD_LIMIT_SECONDS``), so a test can hold a run worker at a known point, act on the run (cancel it, stop its
code server) and then release it by deleting the file: ordering by the test, not by a guessed sleep. A process
that begins to wait creates ``<path>.held`` first: the test can see the moment it got there.
"""

from __future__ import annotations

import os
import signal
import time

ENV_FAULT = "BACKFILL_FAULT"
ENV_HOLD = "BACKFILL_HOLD"
# A hold whose test died before releasing it must not keep a run worker forever.
HOLD_LIMIT_SECONDS = 300.0
HOLD_POLL_SECONDS = 0.1

AFTER_DATA_FILE = "after_data_file"
AFTER_MANIFEST = "after_manifest"
AFTER_VERIFYING = "after_verifying"
IN_PUBLISH_TRANSACTION = "in_publish_transaction"
AFTER_PUBLISH_COMMIT = "after_publish_commit"
AFTER_EVENT = "after_event"
# Around a published table's switch (a sync's Iceberg commit): not step boundaries, the tables' own.
BEFORE_TABLE_COMMIT = "before_table_commit"
AFTER_TABLE_COMMIT = "after_table_commit"
TABLE_BOUNDARIES = (BEFORE_TABLE_COMMIT, AFTER_TABLE_COMMIT)
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
    boundary, _, path = os.environ.get(ENV_HOLD, "").partition("=")
    if boundary == name and path:
        if os.path.exists(path):
            with open(f"{path}.held", "a"):
                pass
        deadline = time.monotonic() + HOLD_LIMIT_SECONDS
        while os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(HOLD_POLL_SECONDS)
