"""A fresh DAGSTER_HOME per Dagster contender, with the same run concurrency for naive Dagster and ours."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import yaml

from backfill_assets.engine.model.settings import PACKAGE_DIR

from .workspace import REPO


def make_home(home: Path, max_runs: int) -> Path:
    """The project's dagster.yaml (run queue, tag limits, pools, sensors), with at most ``max_runs`` runs at once.

    The naive location's runs carry no ``backfill/lane`` tag, so the global limit is what holds them to the same
    two runs at a time as ours (which the lane limit and ``--max-active`` already hold to two).
    """
    home.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    config.setdefault("concurrency", {}).setdefault("runs", {})["max_concurrent_runs"] = max_runs
    (home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return home


def dagster_env(home: Path, source_url: str, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "BACKFILL_SOURCE_URL": source_url,
        # A fixed code version: the driver compares it on every tick, and git is not asked on the hot path.
        "BACKFILL_CODE_VERSION": "bench",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def open_instance(home: Path) -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(str(home))


def daemons_alive(instance: dg.DagsterInstance, *daemon_types: str) -> bool:
    beats = instance.get_daemon_heartbeats()
    return all(t in beats for t in daemon_types)
