"""Downstream follows published versions (docs/ARCHITECTURE.md#propagation): what a request's publishes start."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.plan.lineage import affected_downstream
from backfill_assets.engine.store.request_record import RequestRecord

PROPAGATION_CURSOR = "propagation"
_CURSOR_NAME_LIMIT = 64  # the catalog's cursors.name


def propagation_cursor(location: str) -> str:
    """The publish-log cursor of one code location's propagation sensor. Locations sharing a catalog each read
    every publish (each cascades along its own lineage), so each keeps its own place; an unnamed location keeps
    the original cursor, which a named one starts from."""
    if not location:
        return PROPAGATION_CURSOR
    name = f"{PROPAGATION_CURSOR}:{location}"
    if len(name) > _CURSOR_NAME_LIMIT:
        name = f"{PROPAGATION_CURSOR}:{hashlib.sha256(location.encode()).hexdigest()[:32]}"
    return name


@dataclass
class PropagationPlan:
    cascades: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    handoffs: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    stale: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # policy none: for reconcile only
    cursor: int = 0


def plan_propagation(
    log_rows: list[dict[str, Any]],
    request_of: Callable[[str], RequestRecord | None],
    graph: AssetGraph,
    newest_of: Callable[[str], str | None],
    cursor: int,
    adoption_cutoff: str | None = None,
) -> PropagationPlan:
    """What the publishes after ``cursor`` set in motion, and the cursor to store. ``adoption_cutoff`` (an ISO
    time): a publish at or after it by a Dagster backfill the adoption sensor has not registered yet holds the
    cursor before it — its downstream policy is not known yet — until the backfill is adopted or the publish is
    older than the cutoff."""
    plan = PropagationPlan(cursor=cursor)
    cascades: dict[str, dict[tuple[str, str], None]] = {}
    handoffs: dict[tuple[str, str], dict[str, None]] = {}
    stale: dict[str, dict[tuple[str, str], None]] = {}
    for row in log_rows:
        if _awaits_adoption(row, request_of, graph, adoption_cutoff):
            break
        plan.cursor = max(plan.cursor, int(row["seq"]))
        # Production publishes follow the normal schedule; rollbacks and repairs are not new data.
        if row["action"] != "publish" or not row.get("request_id") or row.get("lane") == T.LANE_PRODUCTION:
            continue
        if row["asset"] not in graph:
            continue  # another code location's asset: its own sensor follows its lineage
        record = request_of(row["request_id"])
        # A closed request takes no new cells (nothing would run them): only an operator's `accept` publishes for
        # one after it closed, and `accept --cascade` makes a request of its own for the downstream.
        if record is None or record.status in M.CLOSED_STATUSES:
            continue
        spec = record.spec
        affected = [
            cell
            for cell in affected_downstream(graph, row["asset"], row["partition_key"], newest_of)
            if not graph[cell[0]].side_effect or spec.side_effect_authorized(cell[0])
        ]
        if not affected:
            continue
        # Dicts as ordered sets: a burst of publishes must not cost a quadratic membership scan.
        if spec.downstream == M.DownstreamPolicy.CASCADE:
            cascades.setdefault(record.request_id, {}).update(dict.fromkeys(affected))
        elif spec.downstream == M.DownstreamPolicy.HANDOFF:
            for asset, partition in affected:
                handoffs.setdefault((record.request_id, asset), {})[partition] = None
        else:
            stale.setdefault(record.request_id, {}).update(dict.fromkeys(affected))
    plan.cascades = {k: list(v) for k, v in cascades.items()}
    plan.handoffs = {k: list(v) for k, v in handoffs.items()}
    plan.stale = {k: list(v) for k, v in stale.items()}
    return plan


def _awaits_adoption(
    row: dict[str, Any], request_of: Callable[[str], RequestRecord | None], graph: AssetGraph, cutoff: str | None
) -> bool:
    """A recent publish of this location's asset by a Dagster backfill not in the ledger yet: its run can publish
    before the adoption sensor's next pass registers the backfill (and its `backfill/downstream` policy)."""
    request_id = row.get("request_id") or ""
    if cutoff is None or row["action"] != "publish" or not request_id.startswith(T.ADOPTED_PREFIX):
        return False
    return row["asset"] in graph and str(row["at"]) >= cutoff and request_of(request_id) is None
