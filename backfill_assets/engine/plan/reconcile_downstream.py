"""What a request's publishes leave behind downstream under policy ``none``: data cells now stale, and the side
effects they would have triggered (a side-effect asset has no versions: its state is its outbox deliveries)."""

from __future__ import annotations

import json
from typing import Any

from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.request_model import DownstreamPolicy
from backfill_assets.engine.plan.lineage import affected_downstream
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.outbox import deliveries


def affected_downstream_report(
    catalog: Catalog, request_id: str, policy: str, graph: AssetGraph
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Policy none: the downstream data cells whose current version did not read the version this request
    published (stale), and the affected side-effect cells with their outbox deliveries. A side-effect asset has
    no versions, so it is never called stale: what it sent, and for which upstream version, is reported instead.
    """
    if policy != DownstreamPolicy.NONE:
        return [], []
    rows = catalog.publishes_of_request(request_id)
    newest = catalog.newest_published_day()
    affected: dict[tuple[str, str], object] = {}
    for row in rows:
        for cell in affected_downstream(graph, row.asset, row.partition_key, newest.get):
            affected[cell] = row
    side_effect_cells = {cell: row for cell, row in affected.items() if graph[cell[0]].side_effect}
    data_cells = {cell: row for cell, row in affected.items() if cell not in side_effect_cells}
    return _stale(catalog, data_cells), _side_effect_state(catalog, side_effect_cells)


def _stale(catalog: Catalog, affected: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    # One query per downstream asset instead of one per cell.
    by_asset: dict[str, list[str]] = {}
    for asset, partition in affected:
        by_asset.setdefault(asset, []).append(partition)
    current: dict[tuple[str, str], Version] = {}
    for asset, partitions in by_asset.items():
        for start in range(0, len(partitions), 500):
            for key, serving in catalog.current_many(asset, partitions[start : start + 500]).items():
                current[(asset, key)] = serving
    stale = []
    for (asset, partition), row in affected.items():
        version = current.get((asset, partition))
        read = (version.input_versions or {}) if version else {}
        if read.get(f"{row.asset}/{row.partition_key}") != row.version_id:
            stale.append(
                {
                    "asset": asset,
                    "partition_key": partition,
                    "current_version_id": version.version_id if version else None,
                    "upstream_version_id": row.version_id,
                }
            )
    return stale


def _side_effect_state(catalog: Catalog, affected: dict[tuple[str, str], Any]) -> list[dict[str, Any]]:
    sent_by_cell: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for asset in {a for a, _ in affected}:
        for d in deliveries(catalog, asset=asset):
            sent_by_cell.setdefault((d["asset"], d["partition_key"]), []).append(d)
    report = []
    for (asset, partition), row in affected.items():
        sent = sent_by_cell.get((asset, partition), [])
        sources = [json.loads(d["payload_json"]).get("source_version_id") for d in sent]
        if any(row.version_id in (source or "").split(",") for source in sources):
            status = "sent for this request's version"
        elif sent:
            # The outbox keys on content: identical figures are never sent twice, and policy none re-sends nothing.
            status = "sent earlier, for an earlier upstream version; not re-sent (policy none)"
        else:
            status = "never sent"
        report.append(
            {
                "asset": asset,
                "partition_key": partition,
                "upstream_version_id": row.version_id,
                "status": status,
                "deliveries": [
                    {
                        "idempotency_key": d["idempotency_key"],
                        "sent_at": d["sent_at"],
                        "source_version_id": source,
                        "request_id": d["request_id"],
                    }
                    for d, source in zip(sent, sources, strict=True)
                ],
            }
        )
    return report
