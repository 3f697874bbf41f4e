"""A pool slot freed while a step registers for it is given to that step (Dagster's event logs leave it waiting).

Dagster's ``SqlEventLogStorage.claim_concurrency_slot`` registers a step that wants a pool slot as pending, and
assigned at once only if it saw a free slot a moment before; pending steps are otherwise assigned when a slot is
freed. Those are separate transactions: a slot freed between the step's look and its registration assigns no one
(the step was not pending yet), and the step then waits with a free slot for as long as nothing else frees one.
With two chunk runs sharing a pool of one — the second launched ahead and waiting for the first's extract — that
is the end of the first extract, and the second run waits forever (its executor spinning a core meanwhile).

The mixin closes the gap where it can be seen: a claim that finds its step unassigned while the pool has an
unassigned slot assigns the pending steps in Dagster's own order (priority, then age), then claims again. Two
processes healing at once may assign one step too many; Dagster's slot rows stay the semaphore, so the extra step
claims only when a slot is really free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dagster._core.storage.event_log.base import ConcurrencyClaimStatus
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    # What the mixin is placed before, as the checker sees it: its super() is a SqlEventLogStorage's method.
    _MixedInto = SqlEventLogStorage
else:
    _MixedInto = object


class AssignsFreedPoolSlots(_MixedInto):
    """Mixed in before a ``SqlEventLogStorage`` subclass."""

    def claim_concurrency_slot(
        self, concurrency_key: str, run_id: str, step_key: str, priority: int | None = None
    ) -> ConcurrencyClaimStatus:
        status = super().claim_concurrency_slot(concurrency_key, run_id, step_key, priority)
        if status.is_claimed or status.is_assigned or not self.has_unassigned_slots(concurrency_key):
            return status
        self.assign_pending_steps([concurrency_key])
        return super().claim_concurrency_slot(concurrency_key, run_id, step_key, priority)
