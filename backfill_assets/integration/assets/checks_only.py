"""A run of a gated asset's checks alone: Dagster's "Execute" / "Execute all" on the asset's Checks tab launches
one (the checks selected, not the asset), with no partition, or with one when launched with ``dagster/partition``.

It never writes a version, publishes or moves a pointer. With a day, it re-audits the version serving that day
(``engine/wap/reaudit.py``) and its results are the checks' evaluation, attached to that version's
materialization. Without one, there is no version to judge: the step says in one warning line how to re-audit a
day or re-run it, and ends without results (Dagster shows the checks skipped), instead of Dagster's error about a
run without a partition key."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import dagster as dg

from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.wap.reaudit import ReAudit, reaudit_serving
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.dagster_adapter.events import materialization_of_version


def is_checks_only(context: dg.AssetExecutionContext) -> bool:
    """The run selected some of the asset's checks and not the asset itself."""
    return not context.selected_asset_keys and bool(context.selected_asset_check_keys)


def no_day_message(asset: str) -> str:
    return (
        f"{asset}: its checks judge one day's published version and this run names no day (the Checks tab's "
        f"Execute launches them without a partition); nothing was written. Re-audit a day's serving version by "
        f"launching the checks with the tag dagster/partition=DAY, or re-run the day with new checks: "
        f"backfill-assets request create --assets {asset} --from DAY --to DAY --reprocess completed "
        f"--reason \"re-audit\""
    )


def run_checks_only(
    context: dg.AssetExecutionContext, graph: AssetGraph, spec: DeclaredAsset, backfill: BackfillResource,
    resources: Mapping[str, Any],
) -> Iterator[dg.AssetCheckEvaluation]:
    if not context.has_partition_key:
        # Succeeds with no result (Dagster shows the checks skipped): a failed step would mark every check
        # "Execution failed" on the Checks tab, red beside days whose versions passed them.
        context.log.warning(no_day_message(spec.name))
        return
    key = context.partition_key
    result = reaudit_serving(backfill.catalog(), backfill.warehouse(), graph, spec, key, resources)
    if result.version is None:
        raise dg.Failure(
            description=f"{spec.name} {key}: no version serves this day, so there is nothing to re-audit; nothing "
                        f"was written. Compute it with: backfill-assets request create --assets {spec.name} "
                        f"--from {key} --to {key} --reason \"first load\"",
            allow_retries=False,
        )
    for line in result.not_rerun:
        context.log.warning(f"{spec.name} {key}: not re-audited (it needs what only a computation has): {line}")
    context.log.info(f"{spec.name} {key}: re-audited serving version {result.version.version_id} (read-only)")
    selected = {check_key.name for check_key in context.selected_asset_check_keys}
    yield from (e for e in evaluations(context.instance, result) if e.check_name in selected)


def evaluations(instance: dg.DagsterInstance, result: ReAudit) -> list[dg.AssetCheckEvaluation]:
    """The re-audit's results, attached to the materialization of the version they judged."""
    version = result.version
    assert version is not None
    target = materialization_of_version(instance, result.asset, result.partition_key, version.version_id)
    return [
        dg.AssetCheckEvaluation(
            asset_key=asset_key(result.asset),
            check_name=check.name,
            passed=check.passed,
            partition=result.partition_key,
            description=f"{check.description} — re-audit of the serving version {version.version_id} (read-only)",
            metadata={k: v for k, v in check.metadata.items() if v is not None}
            | {"version_id": version.version_id, "state": "serving", "reaudit": True},
            target_materialization_data=target,
            blocking=True,
        )
        for check in result.checks
    ]
