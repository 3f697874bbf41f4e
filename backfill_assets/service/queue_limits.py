"""The run queue's limits, read from Dagster's instance: the one source every door's concurrency note comes from.

A request's effective concurrency (``engine/model/concurrency.py``) is bounded by what the instance's run queue
enforces. Reading those limits from the instance (``DagsterInstance.get_concurrency_config``) rather than parsing
``dagster.yaml`` ourselves keeps the numbers the doors print equal to the ones Dagster applies: Dagster accepts the
limits in several places of its config, and its own reading is the only one that cannot drift from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from backfill_assets.engine.plan.creation import QueueLimits

if TYPE_CHECKING:
    import dagster as dg

# How the limits' origin is named when the caller knows no file (a service built on an instance object).
INSTANCE_RUN_QUEUE = "the instance's run queue"


def instance_queue_limits(instance_of: Callable[[], dg.DagsterInstance], where: str = INSTANCE_RUN_QUEUE
                          ) -> Callable[[], QueueLimits]:
    """What the run queue of the instance ``instance_of`` opens lets a request execute, read each time an
    operation asks (so one that needs no limits never opens the instance, and an edited ``dagster.yaml`` counts
    from the next operation on); ``where`` names the config that holds them."""

    def limits() -> QueueLimits:
        # Dagster wiring lives in integration; imported only when an operation needs the limits.
        from backfill_assets.integration.runs.dagster_adapter import run_queue_limits

        return QueueLimits(*run_queue_limits(instance_of()), where)

    return limits
