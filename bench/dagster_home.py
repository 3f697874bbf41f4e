"""A fresh DAGSTER_HOME per Dagster contender, with the same run concurrency for naive Dagster and ours."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import yaml

from backfill_assets.engine.model.settings import PACKAGE_DIR

from .workspace import REPO

PRODUCT_YAML = PACKAGE_DIR.parent / "dagster.yaml"
# The product's own instance pieces, which a Dagster user does not have: naive Dagster (N) runs without them.
PRODUCT_ONLY = ("run_launcher", "run_coordinator")
# The product's SQLite storage classes (Dagster's, keeping their connections): without them, Dagster's own.
PRODUCT_STORAGE = ("event_log_storage", "run_storage", "schedule_storage")
STOCK_DEQUEUE_INTERVAL_S = 1  # the run queue's polling as in every earlier measurement of N


def instance_config(product: dict, max_runs: int, stock: bool = False, pool_limit: int = 0) -> dict:
    """The instance config of a contender's DAGSTER_HOME (see :func:`make_home`); ``product`` is left unchanged."""
    config = yaml.safe_load(yaml.safe_dump(product))  # a deep copy
    config.setdefault("concurrency", {}).setdefault("runs", {})["max_concurrent_runs"] = max_runs
    if pool_limit:
        config["concurrency"].setdefault("pools", {})["default_limit"] = pool_limit
    if stock:
        coordinator = config.get("run_coordinator") or {}
        interval = (coordinator.get("config") or {}).get("dequeue_interval_seconds", STOCK_DEQUEUE_INTERVAL_S)
        for key in (*PRODUCT_ONLY, *PRODUCT_STORAGE):
            config.pop(key, None)
        # Dagster's default coordinator (QueuedRunCoordinator) and launcher (DefaultRunLauncher), the queue polled
        # as often as ours; the queue's limits (concurrency.runs) and pools stay as the product's.
        config["run_queue"] = {**(config.get("run_queue") or {}), "dequeue_interval_seconds": interval}
    return config


def make_home(home: Path, max_runs: int, stock: bool = False, pool_limit: int = 0) -> Path:
    """The project's dagster.yaml (run coordinator and launcher, tag limits, pools, sensors), with at most
    ``max_runs`` runs at once (and ``pool_limit`` steps at once per pool, when not 0).

    ``stock`` (naive Dagster, N): what a Dagster user has today, Dagster's own run launcher, coordinator and
    storage classes (:data:`PRODUCT_ONLY` and :data:`PRODUCT_STORAGE` removed, whatever the product's file
    configures there). The naive location's runs carry
    no ``backfill/lane`` tag, so the global limit is what holds them to the same two runs at a time as ours
    (which the lane limit and ``--max-active`` already hold to two).
    """
    home.mkdir(parents=True, exist_ok=True)
    config = instance_config(yaml.safe_load(PRODUCT_YAML.read_text()), max_runs, stock, pool_limit)
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


def instance_classes(instance: dg.DagsterInstance) -> dict[str, str]:
    """Which run coordinator and launcher a contender's instance really used (recorded with its results)."""
    return {"run_coordinator": type(instance.run_coordinator).__name__,
            "run_launcher": type(instance.run_launcher).__name__}
