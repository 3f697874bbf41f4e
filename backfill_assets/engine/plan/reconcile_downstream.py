"""What a request's publishes leave behind downstream under policy ``none``: data cells now stale, and the side
effects they would have triggered (a side-effect asset has no versions: its state is its outbox deliveries)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.request_model import DownstreamPolicy
from backfill_assets.engine.plan.lineage import affected_downstream
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.outbox import deliveries


@dataclass(frozen=True)
class StaleCell(JsonRecord):
    """A downstream data cell whose serving version did not read the version the request published upstream."""

    asset: str
    partition_key: str
    current_version_id: str | None  # None: the cell has no serving version
    upstream_version_id: str


class SideEffectStatus(StrEnum):
    """What an affected side-effect cell's outbox holds for the request's upstream version."""

    SENT = "sent for this request's version"
    # The outbox keys on content: identical figures are never sent twice, and policy none re-sends nothing.
    SENT_EARLIER = "sent earlier, for an earlier upstream version; not re-sent (policy none)"
    NEVER_SENT = "never sent"


@dataclass(frozen=True)
class SentDelivery(JsonRecord):
    """One outbox delivery of an affected side-effect cell, and the upstream version it was sent for."""

    idempotency_key: str
    sent_at: Any  # as the outbox row holds it
    source_version_id: str | None
    request_id: str | None


@dataclass(frozen=True)
class SideEffectCell(JsonRecord):
    """A side-effect cell affected by the request's publishes (policy none): what it sent, and for which version."""

    asset: str
    partition_key: str
    upstream_version_id: str
    status: SideEffectStatus
    deliveries: tuple[SentDelivery, ...]


def affected_downstream_report(
    catalog: Catalog, request_id: str, policy: str, graph: AssetGraph
) -> tuple[tuple[StaleCell, ...], tuple[SideEffectCell, ...]]:
    """Policy none: the downstream data cells whose current version did not read the version this request
    published (stale), and the affected side-effect cells with their outbox deliveries. A side-effect asset has
    no versions, so it is never called stale: what it sent, and for which upstream version, is reported instead.
    """
    if policy != DownstreamPolicy.NONE:
        return (), ()
    rows = catalog.publishes_of_request(request_id)
    newest = catalog.newest_published_day()
    affected: dict[tuple[str, str], object] = {}
    for row in rows:
        for cell in affected_downstream(graph, row.asset, row.partition_key, newest.get):
            affected[cell] = row
    side_effect_cells = {cell: row for cell, row in affected.items() if graph[cell[0]].side_effect}
    data_cells = {cell: row for cell, row in affected.items() if cell not in side_effect_cells}
    return _stale(catalog, data_cells), _side_effect_state(catalog, side_effect_cells)


def _stale(catalog: Catalog, affected: dict[tuple[str, str], Any]) -> tuple[StaleCell, ...]:
    # One query per downstream asset instead of one per cell.
    by_asset: dict[str, list[str]] = {}
    for asset, partition in affected:
        by_asset.setdefault(asset, []).append(partition)
    # Each serving version's id and what it read, not its whole row: a ten-year request affects ~7,000 cells.
    current: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
    for asset, partitions in by_asset.items():
        for start in range(0, len(partitions), 500):
            for key, serving in catalog.current_reads_many(asset, partitions[start : start + 500]).items():
                current[(asset, key)] = serving
    stale = []
    for (asset, partition), row in affected.items():
        version_id, read = current.get((asset, partition), (None, {}))
        if read.get(f"{row.asset}/{row.partition_key}") != row.version_id:
            stale.append(StaleCell(asset, partition, version_id, row.version_id))
    return tuple(stale)


def _side_effect_state(catalog: Catalog, affected: dict[tuple[str, str], Any]) -> tuple[SideEffectCell, ...]:
    sent_by_cell: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for asset in {a for a, _ in affected}:
        for d in deliveries(catalog, asset=asset):
            sent_by_cell.setdefault((d["asset"], d["partition_key"]), []).append(d)
    report = []
    for (asset, partition), row in affected.items():
        sent = [
            SentDelivery(d["idempotency_key"], d["sent_at"], json.loads(d["payload_json"]).get("source_version_id"),
                         d["request_id"])
            for d in sent_by_cell.get((asset, partition), [])
        ]
        if any(row.version_id in (d.source_version_id or "").split(",") for d in sent):
            status = SideEffectStatus.SENT
        elif sent:
            status = SideEffectStatus.SENT_EARLIER
        else:
            status = SideEffectStatus.NEVER_SENT
        report.append(SideEffectCell(asset, partition, row.version_id, status, tuple(sent)))
    return tuple(report)
