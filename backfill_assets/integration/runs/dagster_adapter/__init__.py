"""The one package that touches ``dagster._core`` (a module per job, re-exported here): reading Dagster backfills for
adoption and for pacing their runs, asset tags from a run coordinator's workspace, the run queue's tag limits, two
asset events the public API cannot build, the four pieces of a run launcher Dagster does not export (the run
worker's entry point, its arguments, reconstructing a code location from a run's origin, the worker health result),
the woken daemon loops, the SQLite event log, run and schedule storage keeping their engines and connections, and
the SQLite and PostgreSQL event logs giving a pool slot freed while a step registered for it to that step
(``pool_claims.py``; PostgreSQL's in ``postgres_event_log.py``, named by deploy/'s dagster.yaml files), a step
waiting for a pool slot in the in-process executor sleeping instead of spinning (``pool_waits.py``), and the
PostgreSQL run storage adding a run and its tags in one transaction (``postgres_run_storage.py``: a restart between
Dagster's two inserts left a run invisible to every tag query, so its cell was requested and published twice), and
a Pipes session inside a gated step leaving the step's events to the gate (``pipes_sessions.py``), and a sensor's run
created outside the daemon as its tick would create it (``sensor_runs.py``: ``request create``'s own driver tick).

Dagster 1.13 has no public API that lists backfills with their target partitions; ``DagsterInstance .get_backfills``
returns ``PartitionBackfill`` objects whose classes live in ``dagster._core.execution.backfill``. A check evaluation
reported by a step that writes several days (a range step, a chunk op) can only point at the materialization it
judged through ``AssetCheckEvaluationTargetMaterializationData``, and an op job (the chunk run) plans no
materialization, so Dagster would never show a day it rejected as Failed without the planned event
``report_materialization_planned`` records. A run launcher (``warm_launcher.py``) must start a run worker as
``dagster api execute_run`` does: Dagster exports ``DefaultRunLauncher`` but not ``ExecuteRunArgs``, the command's
body, ``recon_repository_from_origin`` nor ``CheckRunHealthResult``/``WorkerStatus``, which run monitoring reads.
tests/e2e/test_warm_launcher.py runs real runs through them. The shipped dagster.yaml's SQLite storages are
Dagster's, keeping their SQLAlchemy engines and connections (no public hook reaches how a storage creates them);
tests/integration/test_sqlite_storage.py pins it against Dagster's class. Everything else in the project goes
through ``import dagster as dg`` (tests/engine/test_layering.py keeps the engine free of Dagster).
tests/integration/test_dagster_adapter.py pins this package's behaviour against real backfills,
tests/e2e/test_ui_adoption.py the UI path, and tests/integration/test_check_dashboards.py the two events (check
targets and Failed days, read back through the instance and the UI's GraphQL), so a Dagster upgrade that breaks it
fails loudly.
"""

from __future__ import annotations

from .backfills import (
    ACTIVE,
    CANCELLED,
    BackfillInfo,
    backfill_partitions,
    cancel_backfill,
    enforces_one_run_per_tag_value,
    list_backfills,
    run_queue_limits,
    workspace_asset_owners,
    workspace_asset_tags,
)
from .daemon_loops import (
    HEARTBEAT_FRESH_SECONDS,
    INTERVAL_MARGIN_SECONDS,
    LOADING_RETRY_SECONDS,
    WokenEvent,
    active_backfill_count,
    code_location_origins,
    daemon_heartbeat_after,
    run_dagster_daemon,
    sensors_pending_since,
    woken_daemons,
)
from .events import (
    materialization_of_version,
    report_materialization_planned,
)
from .pipes_sessions import events_left_to_the_gate
from .pool_claims import AssignsFreedPoolSlots
from .pool_waits import sleep_while_waiting_for_pool_slots
from .run_worker import (
    RUN_WORKER_MODULES,
    WORKER_FAILED,
    WORKER_RUNNING,
    execute_run,
    execute_run_args,
    execute_run_on,
    instance_from_ref,
    preload_run_worker_modules,
    reconstruct_repository,
    storage_modules_of,
    worker_health,
)
from .sensor_runs import SensorOrigin, SensorRuns, sensor_origin
from .sqlite_event_log import (
    KEPT_ENGINES,
    SqliteEventLogReusingEngines,
)
from .sqlite_run_storage import (
    SqliteRunStorageKeepingConnections,
    SqliteScheduleStorageKeepingConnections,
)

__all__ = [
    "sleep_while_waiting_for_pool_slots",
    "ACTIVE",
    "CANCELLED",
    "BackfillInfo",
    "list_backfills",
    "backfill_partitions",
    "workspace_asset_owners",
    "workspace_asset_tags",
    "cancel_backfill",
    "run_queue_limits",
    "enforces_one_run_per_tag_value",
    "materialization_of_version",
    "report_materialization_planned",
    "WORKER_RUNNING",
    "WORKER_FAILED",
    "RUN_WORKER_MODULES",
    "preload_run_worker_modules",
    "worker_health",
    "execute_run_args",
    "execute_run",
    "execute_run_on",
    "instance_from_ref",
    "reconstruct_repository",
    "storage_modules_of",
    "LOADING_RETRY_SECONDS",
    "INTERVAL_MARGIN_SECONDS",
    "WokenEvent",
    "woken_daemons",
    "sensors_pending_since",
    "run_dagster_daemon",
    "active_backfill_count",
    "code_location_origins",
    "HEARTBEAT_FRESH_SECONDS",
    "daemon_heartbeat_after",
    "KEPT_ENGINES",
    "SqliteEventLogReusingEngines",
    "SqliteRunStorageKeepingConnections",
    "SqliteScheduleStorageKeepingConnections",
    "AssignsFreedPoolSlots",
    "events_left_to_the_gate",
    "SensorOrigin",
    "SensorRuns",
    "sensor_origin",
]
