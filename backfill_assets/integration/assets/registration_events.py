"""What the Dagster UI shows of a registered file (``backfill-assets register``), recorded without a run after the
catalog committed, as a computed version's step would have shown it:

- published: a runless materialization of the version now serving, whose metadata names the registration (who
  approved it, why, the file's name and sha256) beside the version's identity and its checks, then the check results
  pointed at that materialization;
- rejected: the failed check results (targeting no materialization: Dagster has none of an unpublished version) and
  an observation of the rejected version on the day's partition page; the day's status stays what it was.
"""

from __future__ import annotations

from typing import Any

import dagster as dg

from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.wap.gate import GateOutcome
from backfill_assets.integration.assets.dashboard import (
    check_evaluations,
    published_metadata,
    rejection_observation,
)
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.runs.dagster_adapter import materialization_of_version


def registration_metadata(record: Override, source: dict[str, Any]) -> dict[str, Any]:
    return {
        "registered_by": record.decided_by,
        "registered_reason": record.reason,
        "registered_at": record.at,
        "registered_file": str(source.get("file_name", "")),
        "registered_file_sha256": str(source.get("sha256", "")),
    }


def report_registration(instance: dg.DagsterInstance, outcome: GateOutcome, record: Override) -> str:
    """Record a registration in Dagster (runless events); returns what was recorded."""
    version = outcome.version
    asset, key = version.asset, version.partition_key
    source = dict((version.params or {}).get("registered_file") or {})
    if outcome.published:
        previous = outcome.move.previous_version_id if outcome.move else None
        instance.report_runless_asset_event(dg.AssetMaterialization(
            asset_key=asset_key(asset),
            partition=key,
            description=(f"{version.version_id} registered by {record.decided_by} and published after its checks "
                         f"passed — {record.reason}; replaced {previous or 'nothing'}"),
            metadata={**published_metadata(outcome), **registration_metadata(record, source)},
        ))
        target = materialization_of_version(instance, asset, key, version.version_id)
        for evaluation in check_evaluations(asset, key, outcome, target, blocking=True):
            instance.report_runless_asset_event(evaluation)
        return "materialization"
    for evaluation in check_evaluations(asset, key, outcome, None, blocking=True):
        instance.report_runless_asset_event(evaluation)
    observation = rejection_observation(asset, key, outcome)
    instance.report_runless_asset_event(dg.AssetObservation(
        asset_key=observation.asset_key, partition=key,
        description=f"{observation.description} (registered by {record.decided_by}: {record.reason})",
        metadata={**observation.metadata, **registration_metadata(record, source)},
    ))
    return "observation"
