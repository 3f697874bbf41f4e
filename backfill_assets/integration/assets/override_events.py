"""What the Dagster UI shows of an operator's override (``backfill-assets accept`` / ``reject``): a runless
materialization of the version now serving, whose metadata names the override — who, when, why — beside the
version's own identity, so the day's partition page tells a published-by-a-person version from a checked one.

- accept: a materialization of the accepted version, with its checks as they failed (``failed_checks``);
- reject: a materialization of the version restored, as a rollback's (``rolled_back_from`` …), plus
  ``rejected_version_id``. Always a materialization: the rejected version had one, so the day's latest
  materialization would otherwise keep naming it.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from backfill_assets.engine.model.overrides import Override, OverrideAction
from backfill_assets.engine.store.catalog import Catalog, PointerMove
from backfill_assets.integration.assets.dashboard import (
    checks_table,
    outcome_checks,
    rollback_description,
    rollback_metadata,
    state_label,
    version_metadata,
)
from backfill_assets.integration.keys import asset_key


def override_metadata(record: Override) -> dict[str, Any]:
    return {
        "override": record.action.value,
        "override_by": record.decided_by,
        "override_reason": record.reason,
        "override_at": record.at,
    }


def accept_event(catalog: Catalog, move: PointerMove, record: Override) -> dg.AssetMaterialization:
    accepted = catalog.get(move.version_id)
    checks = outcome_checks(accepted)
    failed = ", ".join(c.name for c in checks if not c.passed) or "none recorded"
    return dg.AssetMaterialization(
        asset_key=asset_key(move.asset),
        partition=move.partition_key,
        description=(
            f"{accepted.version_id} published by override: accepted by {record.decided_by} although checks failed "
            f"({failed}) — {record.reason}; replaced {move.previous_version_id or 'nothing'}"
        ),
        metadata={
            **version_metadata(accepted),
            "state": state_label(accepted),
            "serving_version_id": accepted.version_id,
            "previous_version_id": move.previous_version_id or "",
            "publish_seq": dg.MetadataValue.int(move.seq),
            "checks": checks_table(checks),
            "failed_checks": failed,
            **override_metadata(record),
        },
    )


def reject_event(catalog: Catalog, move: PointerMove, record: Override) -> dg.AssetMaterialization:
    restored = catalog.get(move.version_id)
    reason = f"rejected by {record.decided_by}: {record.reason}"
    return dg.AssetMaterialization(
        asset_key=asset_key(move.asset),
        partition=move.partition_key,
        description=f"{rollback_description(move, reason)} ({move.previous_version_id} is REJECTED by override)",
        metadata={
            **rollback_metadata(restored, move, reason),
            "rejected_version_id": move.previous_version_id or "",
            **override_metadata(record),
        },
    )


def report_override(instance: dg.DagsterInstance, catalog: Catalog, move: PointerMove, record: Override) -> str:
    """Record an accept or reject in Dagster (a runless event); returns what was recorded."""
    build = accept_event if record.action is OverrideAction.ACCEPT else reject_event
    instance.report_runless_asset_event(build(catalog, move, record))
    return "materialization"
