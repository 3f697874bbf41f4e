"""Handoffs: a downstream owner accepts (the driver re-runs their asset's affected days under the same request) or
declines, within the window the request gave them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backfill_assets.engine.model.cells import CellOrigin
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.request_input import choice
from backfill_assets.engine.store.handoffs import (
    ACCEPTED,
    DECLINED,
    Handoff,
    Handoffs,
    HandoffStatus,
    owners_of,
    validate_handoff_id,
)
from backfill_assets.engine.store.ledger import Ledger, validate_request_id

from .context import ServiceContext

DECISIONS = (ACCEPTED, DECLINED)


@dataclass(frozen=True)
class HandoffDecision:
    handoff: Handoff
    cells_added: int

    def as_dict(self) -> dict[str, Any]:
        return {**self.handoff.as_dict(), "cells_added": self.cells_added}


def list_handoffs(context: ServiceContext, request_id: str | None, status: str | None) -> list[Handoff]:
    """The handoffs, optionally of one request and in one status; an unknown status or a malformed request id is
    refused (one line naming the field), not answered with an empty list."""
    request_id = validate_request_id(request_id) if request_id else None
    wanted = choice(HandoffStatus, status, "status").value if status else None
    return Handoffs(context.catalog).list(request_id, wanted)


def decide(context: ServiceContext, handoff_id: str, decision: str, by: str) -> HandoffDecision:
    """Only the asset's owners (as the code location declares them now) or an admin of its ``AccessPolicy`` may
    decide; anyone else is refused, naming who may, and nothing changes."""
    by = context.person(by, "by")
    store = Handoffs(context.catalog)
    offered = store.get(validate_handoff_id(handoff_id))
    asset = offered.asset
    owners = context.graph[asset].owners if asset in context.graph else owners_of(offered.owner)
    context.graph.access.require_decider(by, asset, owners, f"handoff {handoff_id}")
    added = 0
    with context.atomic():  # the decision, the cells it adds and its trail row: one transaction
        decided = store.decide(handoff_id, decision, by, utc_now(), context.seen_user)
        if decision == ACCEPTED:
            cells = [(decided.asset, p) for p in decided.partitions]
            added = Ledger(context.catalog).add_cells(decided.request_id, cells, origin=CellOrigin.HANDOFF,
                                                      reopen=True)
        decision_made = HandoffDecision(decided, added)
        context.record(f"handoff {decision}", handoff_id, f"{decided.asset}: {added} cell(s) added",
                       decided.request_id, actor=by)
    if decision == ACCEPTED:
        context.wake()
    return decision_made
