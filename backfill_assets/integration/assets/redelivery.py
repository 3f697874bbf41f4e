"""A step whose workers keep dying is not run again (``engine/wap/redelivery.py``): the check a gated step makes
before anything else, from the step's events in Dagster's event log."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model.states import IN_PROGRESS
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.wap.redelivery import StepDeliveries, lost_worker_refusal, worker_loss_limit

STEP_STARTS = frozenset({dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_RESTARTED})
STEP_ENDS = frozenset({
    dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.STEP_UP_FOR_RETRY,
})


def step_deliveries(instance: dg.DagsterInstance, run_id: str, step_key: str) -> StepDeliveries:
    """How often the run's step started and ended, by its events (one indexed query of the run's events)."""
    records = instance.get_records_for_run(run_id, of_type=set(STEP_STARTS | STEP_ENDS)).records
    types = [r.event_log_entry.dagster_event_type for r in records if r.event_log_entry.step_key == step_key]
    return StepDeliveries(
        started=sum(1 for t in types if t in STEP_STARTS), ended=sum(1 for t in types if t in STEP_ENDS)
    )


def refuse_after_lost_workers(
    context: dg.AssetExecutionContext | dg.OpExecutionContext, catalog: Catalog, asset: str, partition_keys: list[str]
) -> None:
    """Fail the step, not to be retried, when its workers died ``BACKFILL_WORKER_LOSS_LIMIT`` times in this run.

    The attempts those deliveries left in progress are abandoned with the reason, so the catalog says why too."""
    step_key = str(context.op_execution_context.op_handle)  # an asset's step key: its op's handle
    run_id = context.run.run_id
    refusal = lost_worker_refusal(step_key, step_deliveries(context.instance, run_id, step_key), worker_loss_limit())
    if refusal is None:
        return
    days = set(partition_keys)
    for version in catalog.versions_of_dagster_runs([run_id]):
        if version.asset == asset and version.partition_key in days and version.state in {s.value for s in IN_PROGRESS}:
            catalog.abandon(version.version_id, f"abandoned: {refusal}")
    raise dg.Failure(description=f"{asset}: {refusal}", allow_retries=False)
