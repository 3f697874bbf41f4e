"""The run queue's limits a request is measured against (what ``create`` and the dry run say about concurrency).
Creating a request is the service's (``backfill_assets/service``)."""

from __future__ import annotations

from dataclasses import dataclass

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.concurrency import Concurrency, RunLimit, effective_concurrency


@dataclass(frozen=True)
class QueueLimits:
    """The run queue's limits a request is measured against, and where they come from (for the message)."""

    max_concurrent_runs: int | None
    limits: list[RunLimit]
    source: str

    def concurrency(self, spec: M.RequestSpec) -> Concurrency:
        """What the run queue lets the request execute at once (its max_active, or less, and why)."""
        tags = {T.LANE: T.LANE_BACKFILL, T.REQUEST_ID: "this request", T.TEAM: "this request's team"}
        return effective_concurrency(
            spec.effective_max_active, tags, self.max_concurrent_runs, self.limits, self.source
        )
