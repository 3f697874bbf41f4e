"""The code location's surface as a snapshot: assets, checks, jobs, sensors and schedules, so a change to the
graph is explicit in review (as dagster-open-platform does). Regenerate deliberately with
``BACKFILL_UPDATE_SNAPSHOTS=1 pytest tests/integration/test_definitions_snapshot.py`` and commit the diff."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.orders import DEFS as defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "definitions.json"
UPDATE_ENV = "BACKFILL_UPDATE_SNAPSHOTS"


def surface() -> dict:
    repo = defs.get_repository_def()
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets_def = repo.assets_defs_by_key[key]
        partitions = node.partitions_def
        assets[key.to_user_string()] = {
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": f"daily from {partitions.start.date()} in {partitions.timezone}" if partitions else None,
            "checks": sorted(f"{s.name}{' (blocking)' if s.blocking else ''}" for s in assets_def.check_specs),
            "tags": {k: v for k, v in sorted(node.tags.items()) if k.startswith("backfill/")},
            "owners": sorted(node.owners),
            "group": node.group_name,
            # The op config the Launchpad offers: the gate's own fields and an asset's declared config beside them.
            "config": _config_fields(assets_def.op.config_schema),
            # How often a step is tried again after a technical fault (gated_asset(retry_policy=...)).
            "retry_policy": _retry_policy(assets_def.op.retry_policy),
        }
    return {
        "assets": assets,
        "jobs": sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")),
        "sensors": {
            s.name: {"default_status": s.default_status.value, "minimum_interval_seconds": s.minimum_interval_seconds}
            for s in sorted(repo.sensor_defs, key=lambda s: s.name)
        },
        "schedules": {
            s.name: {"cron": s.cron_schedule, "timezone": s.execution_timezone, "job": s.job_name,
                     "default_status": s.default_status.value}
            for s in sorted(repo.schedule_defs, key=lambda s: s.name)
        },
    }


def _retry_policy(policy) -> dict | None:
    if policy is None:
        return None
    return {"max_retries": policy.max_retries, "delay": policy.delay,
            "backoff": policy.backoff and policy.backoff.value, "jitter": policy.jitter and policy.jitter.value}


def _config_fields(config_schema) -> list[str]:
    if config_schema is None:
        return []
    return sorted(getattr(config_schema.as_field().config_type, "fields", {}))


def test_the_definitions_surface_matches_its_snapshot():
    current = surface()
    if os.environ.get(UPDATE_ENV):
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text()), f"definitions changed; if intended, rerun with {UPDATE_ENV}=1"
