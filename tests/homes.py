"""A fresh Dagster home for a test: DAGSTER_HOME set, no stray BACKFILL_* location, a pinned code version."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import dagster as dg
import pytest
import yaml

from backfill_assets.engine.model.settings import PACKAGE_DIR, Settings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse

LOCATION_VARIABLES = ("BACKFILL_WAREHOUSE", "BACKFILL_CATALOG_URL", "BACKFILL_SOURCE_URL", "BACKFILL_SINK_PATH",
                      "BACKFILL_OPENLINEAGE")
TEST_CODE_VERSION = "test-code-1"


def fresh_home(home: Path, monkeypatch: pytest.MonkeyPatch, code_version: str = TEST_CODE_VERSION) -> Settings:
    """Point every process of the test at ``home`` (created) and return its settings."""
    home.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    for var in (*LOCATION_VARIABLES, "BACKFILL_MODULE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BACKFILL_CODE_VERSION", code_version)
    return Settings.from_env()


class HasStores:
    """``catalog`` and ``warehouse`` of an environment that has ``settings``."""

    settings: Settings

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.settings.catalog_url)

    @property
    def warehouse(self) -> Warehouse:
        return Warehouse(self.settings.warehouse_root)


STORAGE_BLOCKS = ("event_log_storage", "run_storage", "schedule_storage")


def shipped_storage() -> dict:
    """The storage blocks of the project's dagster.yaml (Dagster's SQLite storage keeping its engines and
    connections), as ``instance_for_test`` overrides: in-process test instances store what a deployed home does."""
    shipped = yaml.safe_load((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    return {block: shipped[block] for block in STORAGE_BLOCKS}


DEPLOY_POSTGRES = PACKAGE_DIR.parent / "deploy" / "postgres" / "dagster.yaml"


def deploy_postgres_instance(url: str, folder: Path, monkeypatch: pytest.MonkeyPatch, **blocks: dict
                             ) -> dg.DagsterInstance:
    """An instance in ``folder`` (created) on the database at ``url``, with deploy/postgres/dagster.yaml's storage
    blocks, ``blocks`` in place of those it names."""
    monkeypatch.setenv("DAGSTER_PG_URL", url)
    deployed = yaml.safe_load(DEPLOY_POSTGRES.read_text())
    folder.mkdir()
    (folder / "dagster.yaml").write_text(yaml.safe_dump({b: blocks.get(b, deployed[b]) for b in STORAGE_BLOCKS}))
    return dg.DagsterInstance.from_config(str(folder))


# In-process test instances capture no step output: nothing reads it there, and Dagster's local compute log manager
# starts a `tail -F` and a watcher interpreter for each captured stream of every step (four processes forked from the
# test process per step) and waits for them when the step ends. The homes the daemon, webserver and browser tests
# run keep Dagster's default. NoOpComputeLogManager is how Dagster's docs switch capture off in dagster.yaml.
NO_COMPUTE_LOGS = {
    "compute_logs": {"module": "dagster._core.storage.noop_compute_log_manager", "class": "NoOpComputeLogManager"}
}


def in_process_overrides() -> dict:
    """``instance_for_test`` overrides of an in-process test instance: the shipped storage, no captured output."""
    return {**shipped_storage(), **NO_COMPUTE_LOGS}


_TEMPLATE_HOMES: list[Path] = []


@contextmanager
def in_process_instance(home: Path) -> Iterator[dg.DagsterInstance]:
    """``instance_for_test`` on ``home`` with ``in_process_overrides``, its empty SQLite files (runs, event index,
    schedules) copied from a home made once per process: Dagster creates and migrates each file afresh, about
    0.15 s of CPU a test against 0.03 s for the copy."""
    if not _TEMPLATE_HOMES:
        template = Path(tempfile.mkdtemp(prefix="instance-template-"))
        atexit.register(shutil.rmtree, template, True)
        with dg.instance_for_test(temp_dir=str(template), overrides=in_process_overrides()):
            pass
        _TEMPLATE_HOMES.append(template)
    shutil.copytree(_TEMPLATE_HOMES[0], home, dirs_exist_ok=True)
    with dg.instance_for_test(temp_dir=str(home), overrides=in_process_overrides()) as instance:
        yield instance


# What a stock home copies from the shipped file: plain Dagster config the promises rest on.
STOCK_COPIED_BLOCKS = ("concurrency", "run_monitoring")


def write_stock_instance_yaml(home: Path, dequeue_interval_seconds: int | None = None) -> dict:
    """A dagster.yaml of Dagster's own classes only (``QueuedRunCoordinator``, and by leaving their blocks out
    ``DefaultRunLauncher`` and Dagster's SQLite storage), with the shipped file's run-queue limits, pools and run
    monitoring; returns it. ``dequeue_interval_seconds`` configures the coordinator (default: Dagster's, 5 s)."""
    shipped = yaml.safe_load((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    coordinator: dict = {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}
    if dequeue_interval_seconds is not None:
        coordinator["config"] = {"dequeue_interval_seconds": dequeue_interval_seconds}
    config = {"telemetry": {"enabled": False}, "run_coordinator": coordinator,
              **{block: shipped[block] for block in STOCK_COPIED_BLOCKS}}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config
