"""Running partitions in-process on a real Dagster instance (the demo's production days and tests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.integration.assets.chunks import CHUNK_JOB, chunk_run_config, chunk_tags
from backfill_assets.integration.jobs import PRODUCTION_JOB
from backfill_assets.integration.keys import asset_key
from backfill_assets.interrupts import RunInterrupted, interrupt_again, sigterm_kept

# The step logs stay in the instance (and the UI); the console gets only errors.
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
# Dagster's failure reason for a run interrupted between its steps (Ctrl-C, or SIGTERM while it runs); inside a step
# the step raises RunInterrupted (integration/assets/interrupted_steps.py), as these runs are tagged to.
INTERRUPTED = "UNEXPECTED_TERMINATION"
STOP_ON_INTERRUPT = {T.ON_INTERRUPT: T.ON_INTERRUPT_STOP}


@dataclass(frozen=True)
class LocalRun:
    partition_key: str
    run_id: str
    success: bool
    failure: str | None


def _failure_message(result: dg.ExecuteInProcessResult) -> str | None:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            message = event.step_failure_data.error.message.strip().splitlines()[0]
            return message.split("Failure: ", 1)[-1]
    return None if result.success else "run failed"


def _interrupted(event: dg.DagsterEvent) -> bool:
    if event.is_step_failure:
        error = event.step_failure_data.error
        return error is not None and error.cls_name == RunInterrupted.__name__
    return event.is_run_failure and getattr(event.job_failure_data.failure_reason, "value", None) == INTERRUPTED


def _stop_if_interrupted(result: dg.ExecuteInProcessResult) -> None:
    """Ctrl-C reached the run: stop here, as Ctrl-C does, rather than report a failed run and start the next."""
    if any(_interrupted(event) for event in result.all_events):
        interrupt_again()


def run_partitions(
    instance: dg.DagsterInstance,
    partition_keys: Iterable[str],
    *,
    defs: dg.Definitions,
    assets: list[str] | None = None,
    tags: Mapping[str, str] | None = None,
    run_config_for: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[LocalRun]:
    """Execute one run per partition, in order; a failed partition does not stop the next (Ctrl-C does).

    An item may also be a ``(first, last)`` range: one Dagster partition-range run of the selected assets."""
    job = defs.resolve_job_def(PRODUCTION_JOB)
    run_tags = {T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PRIORITY: str(T.PRIORITY_PRODUCTION), **STOP_ON_INTERRUPT,
                **(tags or {})}
    results = []
    selection = {asset_key(a) for a in assets} if assets else None
    for key in partition_keys:
        with sigterm_kept():
            result, key = _run_one(job, instance, key, run_tags, selection, run_config_for)
        _stop_if_interrupted(result)
        results.append(LocalRun(key, result.run_id, result.success, _failure_message(result)))
    return results


def _run_one(job: Any, instance: dg.DagsterInstance, key: str | tuple[str, str], run_tags: Mapping[str, str],
             selection: set[dg.AssetKey] | None, run_config_for: Mapping[str, Mapping[str, Any]] | None,
             ) -> tuple[dg.ExecuteInProcessResult, str]:
    """One partition's run (or one partition-range run), and the partition it is reported under."""
    configs = run_config_for or {}
    if isinstance(key, tuple):
        first, last = key
        # A range run selects no checks: the step reports them per partition itself.
        subset = job.get_subset(asset_selection=selection or set(job.asset_layer.executable_asset_keys),
                                asset_check_selection=set())
        result = subset.execute_in_process(
            instance=instance,
            tags={**run_tags, T.DAGSTER_RANGE_START: first, T.DAGSTER_RANGE_END: last},
            run_config={**QUIET, **configs.get(first, {})},
            raise_on_error=False,
        )
        return result, first
    result = job.execute_in_process(
        partition_key=key,
        instance=instance,
        tags=run_tags,
        run_config={**QUIET, **configs.get(key, {})},
        asset_selection=list(selection) if selection else None,
        raise_on_error=False,
    )
    return result, key


def run_chunk(
    instance: dg.DagsterInstance,
    days_by_asset: Mapping[str, list[str]],
    *,
    defs: dg.Definitions,
    tags: Mapping[str, str] | None = None,
    configs: Mapping[str, Mapping[str, Any]] | None = None,
) -> LocalRun:
    """One batched (chunk) run in-process: the given days of each batchable asset (``configs``: asset → its own
    config)."""
    with sigterm_kept():
        result = defs.resolve_job_def(CHUNK_JOB).execute_in_process(
            instance=instance,
            tags={T.LANE: T.LANE_MANUAL, **STOP_ON_INTERRUPT, **(tags or {}), **chunk_tags(days_by_asset)},
            run_config={**QUIET, **chunk_run_config(days_by_asset, configs)},
            raise_on_error=False,
        )
    _stop_if_interrupted(result)
    first = min(d for days in days_by_asset.values() for d in days)
    return LocalRun(first, result.run_id, result.success, _failure_message(result))
