"""A step waiting for a pool slot in Dagster's in-process executor sleeps until its next claim instead of spinning.

Dagster 1.13's ``InstanceConcurrencyContext.interval_to_next_pending_claim_check`` returns
``min([0, *time_until_each_pending_check])``: never above zero. The in-process executor (``execute_plan``) sleeps
only for a positive interval, so while a step waits in a pool its run worker loops without sleeping, a whole core
for as long as the wait lasts, though it asks the pool again only when the claim's own back-off (1 s, growing to
15 s) has passed. A backfill's chunk runs all start with the root asset, whose steps share the source's pool, one at
a time: at 365 days of the orders example, the second run's ~25 s wait cost ~23 CPU-seconds of the benchmark's
B (104.6 CPU-s with the shipped pool of one, 81.6 with two slots). The interval is the time until the earliest
pending check, never below zero; when to ask the pool again is unchanged, and so is every other loop (the
multi-process executor does not call it).

Installed when this package is imported (every process that loads a code location with gated assets, on any
instance), and only while Dagster's method still returns a non-positive interval for a check due later: a Dagster
that fixes it keeps its own.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable

from dagster._core.execution.plan.instance_concurrency_context import InstanceConcurrencyContext

_PROBE_SECONDS = 60.0
# Dagster's own, kept before any install (the tests compare it with ours).
DAGSTERS_METHOD = InstanceConcurrencyContext.interval_to_next_pending_claim_check


def interval_to_next_pending_claim_check(self: InstanceConcurrencyContext) -> float:
    """Seconds until the earliest pending claim is due to be asked again (0 when one is due, or none pends)."""
    if not self._pending_claims:
        return 0.0
    now = time.time()
    return max(0.0, min((ready_at - now for ready_at in self._pending_timeouts.values()), default=0.0))


def spins_while_waiting(method: Callable[[InstanceConcurrencyContext], float] | None = None) -> bool:
    """Whether ``method`` (by default the one installed) gives no sleep to a step whose next claim is a minute away
    (Dagster 1.13's does)."""
    method = method or InstanceConcurrencyContext.interval_to_next_pending_claim_check
    probe = object.__new__(InstanceConcurrencyContext)
    probe._pending_claims = {"probe"}
    probe._pending_timeouts = defaultdict(float, {"probe": time.time() + _PROBE_SECONDS})
    return method(probe) <= 0


def sleep_while_waiting_for_pool_slots() -> None:
    if spins_while_waiting():
        InstanceConcurrencyContext.interval_to_next_pending_claim_check = (  # type: ignore[method-assign]
            interval_to_next_pending_claim_check
        )
