"""The pieces of a run launcher Dagster does not export: the run worker's entry point and arguments, a code
location reconstructed from a run's origin, the worker health result run monitoring reads."""

from __future__ import annotations

import dagster as dg
from dagster._core.launcher import CheckRunHealthResult, WorkerStatus

# --- run launcher pieces -----------------------------------------------------------------------------------------

WORKER_RUNNING = WorkerStatus.RUNNING
WORKER_FAILED = WorkerStatus.FAILED


# What every run worker imports before its first step, imported by the warm worker before any fork so no run pays
# it. Dagster's private module paths: one renamed by an upgrade is skipped (a slower start, never a failure).
RUN_WORKER_MODULES = (
    "dagster._cli.api",
    "dagster._core.execution.api",
    "dagster._core.executor.in_process",
    "dagster._core.storage.runs.sqlite.sqlite_run_storage",
    "dagster._core.storage.event_log.sqlite.sqlite_event_log",
    "dagster._core.storage.event_log.sqlite.consolidated_sqlite_event_log",
    "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
    "dagster._core.storage.local_compute_log_manager",
    "sqlalchemy.dialects.sqlite",
    "alembic",
    # The PostgreSQL deployment, when installed.
    "dagster_postgres",
    "psycopg2",
    "sqlalchemy.dialects.postgresql",
)


def preload_run_worker_modules() -> list[str]:
    """Import ``RUN_WORKER_MODULES``; returns those that could not be imported."""
    import importlib

    missing = []
    for name in RUN_WORKER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def worker_health(running: bool, message: str | None = None) -> CheckRunHealthResult:
    """The answer run monitoring expects from ``RunLauncher.check_run_worker_health``."""
    return CheckRunHealthResult(WORKER_RUNNING if running else WORKER_FAILED, message)


def execute_run_args(run: dg.DagsterRun, instance: dg.DagsterInstance) -> str:
    """The serialized arguments of ``dagster api execute_run`` for ``run`` (what container launchers pass)."""
    from dagster._grpc.types import ExecuteRunArgs

    origin = run.job_code_origin
    if origin is None:  # a run made for a launcher always has one; a run without one has no code to execute
        raise dg.DagsterInvariantViolationError(f"run {run.run_id} has no job code origin to execute")
    return dg.serialize_value(ExecuteRunArgs(job_origin=origin, run_id=run.run_id, instance_ref=instance.get_ref()))


def execute_run(execute_run_args_json: str) -> None:
    """Be ``dagster api execute_run <args>`` in this process: open the instance from its ref, run, report."""
    from dagster._cli.api import execute_run_command

    command = execute_run_command.callback  # click types a command's callback Optional; this one has its body
    if command is None:
        raise dg.DagsterInvariantViolationError("dagster api execute_run has no callback to call")
    command(input_json=execute_run_args_json, compressed_input_json=None)


def instance_from_ref(instance_ref_json: str) -> dg.DagsterInstance:
    """The instance a serialized ``InstanceRef`` names, opened as a run worker opens it."""
    from dagster._core.instance.ref import InstanceRef

    return dg.DagsterInstance.from_ref(dg.deserialize_value(instance_ref_json, InstanceRef))


def execute_run_on(instance: dg.DagsterInstance, execute_run_args_json: str) -> None:
    """``execute_run`` on an instance this process already opened (a spare run worker opens it ahead of its run):
    the same body, interrupts captured the same way, the same exit code."""
    import sys

    from dagster._cli.api import _execute_run_command_body
    from dagster._grpc.types import ExecuteRunArgs
    from dagster._utils.interrupts import capture_interrupts

    with capture_interrupts(), instance:
        args = dg.deserialize_value(execute_run_args_json, ExecuteRunArgs)
        code = _execute_run_command_body(
            args.run_id, instance, lambda event: None, set_exit_code_on_failure=args.set_exit_code_on_failure or False
        )
    if code:
        sys.exit(code)


def reconstruct_repository(repository_origin) -> dg.RepositoryDefinition:
    """Load a code location's repository from a run's ``job_code_origin.repository_origin``, as a run worker does
    (same cached module import and definitions)."""
    from dagster._utils.hosted_user_process import recon_repository_from_origin

    return recon_repository_from_origin(repository_origin).get_definition()


def storage_modules_of(instance_ref) -> list[str]:
    """Module names of the classes an instance ref configures (storages, compute logs, launcher …): importing them
    ahead of time spares every run worker the import, without opening anything."""
    return sorted(
        {data.module_name for data in instance_ref if getattr(data, "module_name", None)}
    )
