"""The last question a gated step asks before it publishes: was its run, or the request it works for, cancelled?"""

from __future__ import annotations

from typing import Callable

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.store.ledger import Ledger

# A run in one of these may not publish: it was asked to stop, or was marked cancelled without its worker's
# confirmation (`request cancel` when its code server did not answer), and its worker is still going.
STOPPED_RUN_STATUSES = (dg.DagsterRunStatus.CANCELING, dg.DagsterRunStatus.CANCELED)


def unless_run_stopped(
    instance: dg.DagsterInstance, run_id: str, ledger: Ledger | None = None, request_id: str | None = None
) -> Callable[[], str | None]:
    """Why the run's step may not publish (its run, or the request it works for, was cancelled), or None.

    The request matters too: a run created after ``request cancel`` stopped looking (its sensor tick was delayed
    past the cancel's wait) is never terminated, but must not publish for a request that no longer exists.
    """

    stopped = dg.RunsFilter(run_ids=[run_id], statuses=list(STOPPED_RUN_STATUSES))

    def guard() -> str | None:
        # The run's id if its status is a stopped one: read before every publish, and reading the whole run (its
        # config lists every day of a chunk) cost twice the CPU (1.05 ms against 0.55). It is read only to say
        # which status it has.
        if instance.get_run_ids(stopped, limit=1):
            run = instance.get_run_by_id(run_id)
            status = run.status.value if run is not None else "stopped"
            return f"run {run_id} is {status}: it was cancelled, so it may not publish"
        if ledger is not None and request_id and ledger.status_of(request_id) == M.CANCELLED:
            return f"request {request_id} was cancelled, so run {run_id} may not publish"
        return None

    return guard
