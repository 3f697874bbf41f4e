"""How many times one step may lose its worker before it is not run again.

A broker that acknowledges a step's message only when the step has ended (Celery's ``task_acks_late`` with
``task_reject_on_worker_lost``) gives the message of a worker that died mid-step to another worker: right after a
lost machine, and a loop without end when the step itself takes down every worker that runs it (a crash in a native
library, an allocation the OOM killer answers). Celery keeps no delivery count, and RabbitMQ's classic queues
neither, so the step counts for itself from what Dagster records of it: every delivery starts the step once (a
start event), and every step that ends says so (success, failure, up for retry). A start without an end is a
delivery whose worker died. The count is per Dagster run: a person's re-execution starts afresh.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from backfill_assets.engine.model.numbers import whole_number

ENV_WORKER_LOSS_LIMIT = "BACKFILL_WORKER_LOSS_LIMIT"
# Twice: one lost machine is survived with room to spare (a second worker can die for its own reasons), and a step
# that kills its worker costs two workers, not all of them.
DEFAULT_WORKER_LOSS_LIMIT = 2
MAX_WORKER_LOSS_LIMIT = 1000


@dataclass(frozen=True)
class StepDeliveries:
    """What Dagster recorded of one step of one run, the delivery now starting included."""

    started: int  # start events: one per delivery (and per retry)
    ended: int  # success, failure and up-for-retry events

    @property
    def lost(self) -> int:
        """Earlier deliveries whose process died before the step ended."""
        return max(self.started - 1 - self.ended, 0)


def worker_loss_limit(environ: Mapping[str, str] | None = None) -> int:
    """``BACKFILL_WORKER_LOSS_LIMIT`` (a whole number, at least 1), else the default. Read when a step starts."""
    env = os.environ if environ is None else environ
    raw = (env.get(ENV_WORKER_LOSS_LIMIT) or "").strip()
    if not raw:
        return DEFAULT_WORKER_LOSS_LIMIT
    return whole_number(raw, ENV_WORKER_LOSS_LIMIT, 1, MAX_WORKER_LOSS_LIMIT)


def lost_worker_refusal(step: str, deliveries: StepDeliveries, limit: int) -> str | None:
    """Why this delivery of ``step`` must not run (its workers died ``limit`` times already), or None."""
    if deliveries.lost < limit:
        return None
    return (
        f"step {step} lost its worker {deliveries.lost} time(s): each time the process running it died before the "
        f"step ended (killed, out of memory, or its machine lost); not delivered again ({ENV_WORKER_LOSS_LIMIT}="
        f"{limit}). Re-run it once the cause is found"
    )
