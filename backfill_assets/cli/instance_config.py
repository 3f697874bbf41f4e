"""The run queue limits of the instance's dagster.yaml, read as plain YAML.

``request create`` must not import Dagster (it starts in a fraction of the time); the limits it reports are the
same ones the run queue enforces, read from the file the instance is built from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from backfill_assets.engine.model.concurrency import RunLimit, run_limits

INSTANCE_YAML = "dagster.yaml"


def run_queue_limits(home: Path) -> tuple[int | None, list[RunLimit]]:
    """(max_concurrent_runs, tag limits) of ``home/dagster.yaml``; (None, []) when it sets none."""
    try:
        config = yaml.safe_load((home / INSTANCE_YAML).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None, []
    # Dagster accepts the limits in one of three places (concurrency.runs, run_queue, the run coordinator).
    queue = (
        _dig(config, "concurrency", "runs")
        or _dig(config, "run_queue")
        or _dig(config, "run_coordinator", "config")
        or {}
    )
    max_runs = queue.get("max_concurrent_runs")
    return (max_runs if isinstance(max_runs, int) else None), run_limits(queue.get("tag_concurrency_limits"))


def _dig(config: Any, *path: str) -> dict | None:
    for part in path:
        if not isinstance(config, dict):
            return None
        config = config.get(part)
    return config if isinstance(config, dict) else None
