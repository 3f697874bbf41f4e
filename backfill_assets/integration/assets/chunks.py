"""Batched backfill runs (``--partitions-per-run K``): one run writes K consecutive days of every batchable asset,
or of one depends-on-past asset (walked in order, stopping at its first day that does not publish).

An op job, not an asset job: in an asset job a downstream step is skipped when its upstream step yields no
output, and a range step yielding its output would record a materialization for every day of the range,
rejected ones included. Here each asset is one op that gates its days one frame at a time and reports each
day's check evaluations and (when published) its materialization itself, after recording the planned
materialization an asset job would have (so a day the run rejects shows Failed in Dagster); an op always completes
so that the days its upstream did publish flow on, and the last op fails the run naming every day that did not
publish.
"""


from typing import Any, Mapping

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.model.gates import pool_for
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.model.identity import validate_partition_key
from backfill_assets.engine.model.states import VERIFIED, VersionState
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.integration.assets.dashboard import day_events
from backfill_assets.integration.assets.gated import gate_one, log_not_attempted
from backfill_assets.integration.assets.interrupted_steps import stopping_on_interrupt
from backfill_assets.integration.assets.redelivery import refuse_after_lost_workers
from backfill_assets.integration.assets.retries import retry_policy_of
from backfill_assets.integration.assets.table_sync import StepTableSync
from backfill_assets.integration.assets.user_config import step_config, with_user_fields
from backfill_assets.integration.keys import node_name
from backfill_assets.integration.resources import BACKFILL_RESOURCE
from backfill_assets.integration.runs.dagster_adapter import report_materialization_planned
from backfill_assets.integration.runs.run_identity import computation_of, logical_run_for

CHUNK_JOB = "backfill_chunk"
VERDICT_OP = "chunk_verdict"


def op_name(asset: str) -> str:
    return f"chunk_{node_name(asset)}"


class ChunkAssetConfig(dg.Config):
    """The days this run writes for one asset (none: the asset is not part of the chunk)."""

    partitions: list[str] = []


def chunk_run_config(
    days_by_asset: Mapping[str, list[str]], configs: Mapping[str, Mapping[str, Any]] | None = None
) -> dict:
    """Each asset's days, and its own config (``configs``: asset → fields) beside them."""
    return {
        "ops": {
            op_name(asset): {
                "config": {
                    "partitions": list(days),
                    **(configs or {}).get(asset, {}),
                }
            }
            for asset, days in days_by_asset.items()
        }
    }


def chunk_tags(days_by_asset: Mapping[str, list[str]]) -> dict[str, str]:
    days = sorted({d for ds in days_by_asset.values() for d in ds})
    return {T.CHUNK_FIRST: days[0], T.CHUNK_LAST: days[-1], T.CHUNK_ASSETS: ",".join(days_by_asset)}


def planned_days(run_config: Mapping[str, Any], graph: AssetGraph) -> dict[str, list[str]]:
    """asset → days, read back from the run's own config (every op sees what its upstream ops were given)."""
    ops = (run_config or {}).get("ops", {})
    return {
        asset: list(ops.get(op_name(asset), {}).get("config", {}).get("partitions", []))
        for asset in graph.chunk_assets
    }


def logical_runs_of_chunk(
    context: dg.OpExecutionContext,
    graph: AssetGraph,
    catalog: Catalog,
    config_classes: Mapping[str, type[dg.Config]],
    assets: list[str],
) -> dict[str, str]:
    """asset → the logical run this run computes it under: each asset's op compares its own code version and params
    with what the runs it re-executes computed (engine/model/logical_run), so two assets of one re-executed chunk
    can differ — one given a corrected config is a new run, the other another attempt. Every op of the run reads
    its upstream's and the verdict reads all, from the run's own config as Dagster processed it."""
    if not context.run.root_run_id:
        return {asset: context.run.run_id for asset in assets}
    ops = dg.validate_run_config(context.job_def, context.run.run_config).get("ops", {})
    chosen: dict[str, str] = {}
    for asset in assets:
        given = step_config(ops.get(op_name(asset), {}).get("config", {}), config_classes.get(asset))
        params = {"config": given.values} if given is not None else {}
        computation = computation_of(graph, asset, params)
        chosen[asset] = logical_run_for(context.instance, context.run, catalog, asset, computation).logical_run_id
    return chosen


def _concluded(catalog: Catalog, asset: str, key: str, run_id: str) -> VersionState | None:
    """The final state this logical run already reached for the cell (an earlier attempt of a retried op)."""
    for version in catalog.versions_of(asset, key):
        state = VersionState(version.state)
        if version.logical_run_id == run_id and (state in VERIFIED or state is VersionState.REJECTED):
            return state
    return None


def _published_by(catalog: Catalog, asset: str, key: str, run_id: str) -> bool:
    return _concluded(catalog, asset, key, run_id) in VERIFIED


def build_chunk_op(
    spec: DeclaredAsset, graph: AssetGraph, config_classes: Mapping[str, type[dg.Config]] | None = None
) -> dg.OpDefinition:
    """``config_classes``: asset → its config class, for this asset's own fields and to tell which logical run
    its upstream ops of the same run computed under."""
    config_classes = dict(config_classes or {})
    config_class = config_classes.get(spec.name)
    op_config = with_user_fields(ChunkAssetConfig, config_class, spec.name)
    upstream_in_chunk = [u for u in spec.upstream if u in graph.chunk_assets]
    walk = "in order, stopping at the first day that does not publish" if spec.depends_on_past else "day by day"

    @dg.op(
        name=op_name(spec.name),
        ins={f"after_{node_name(u)}": dg.In(dg.Nothing) for u in upstream_in_chunk},
        out=dg.Out(dg.Nothing),
        pool=pool_for(spec.pool, spec.upstream),
        # The asset's own: each asset is its own op, so a batched run retries each as its one-day step would.
        retry_policy=retry_policy_of(spec.retries),
        description=f"Write, audit and publish {spec.name}, {walk}, for the days of this chunk.",
        required_resource_keys={BACKFILL_RESOURCE, *spec.resources},
    )
    def _chunk_op(context: dg.OpExecutionContext, config: op_config):  # type: ignore[valid-type]
        del config  # op_config, a class made here: read as the op's config, its fields typed by ChunkAssetConfig
        yield from stopping_on_interrupt(context, _chunk_step(context))

    def _chunk_step(context: dg.OpExecutionContext):
        backfill = getattr(context.resources, BACKFILL_RESOURCE)
        user_config = step_config(context.op_config, config_class)
        try:
            days = [validate_partition_key(d) for d in (context.op_config or {}).get("partitions", [])]
        except BackfillError as exc:
            raise dg.Failure(description=f"{spec.name}: {exc}", allow_retries=False) from exc
        if spec.depends_on_past:
            days = sorted(days)  # each day reads the one before it, published a moment earlier in this run
        catalog = backfill.catalog()
        # A broker hands a dead worker's step to another worker: bounded here too, as for a one-day step.
        refuse_after_lost_workers(context, catalog, spec.name, days)
        run_ids = logical_runs_of_chunk(context, graph, catalog, config_classes, [spec.name, *upstream_in_chunk])
        if context.run.root_run_id:
            context.log.info(f"{spec.name}: computed under logical run {run_ids[spec.name]}")
        planned = planned_days(context.run.run_config, graph)
        tables = StepTableSync(context.log, backfill, spec.name)
        try:
            yield from _gate_days(context, graph, spec, backfill, catalog, run_ids, planned, days, user_config,
                                  upstream_in_chunk, tables)
        finally:
            tables.final()  # what is left of the chunk's days, in one commit

    return _chunk_op


def _gate_days(
    context: dg.OpExecutionContext,
    graph: AssetGraph,
    spec: DeclaredAsset,
    backfill: Any,
    catalog: Catalog,
    run_ids: Mapping[str, str],
    planned: Mapping[str, list[str]],
    days: list[str],
    user_config: Any,
    upstream_in_chunk: list[str],
    tables: StepTableSync,
):
    """Gate the chunk's days in turn; a depends-on-past asset stops at the first day it does not publish."""
    for n, key in enumerate(days):
        published = yield from _gate_day(context, graph, spec, backfill, catalog, run_ids, planned, key,
                                         user_config, upstream_in_chunk, n == 0)
        if days[n + 1:]:
            tables.tick()
        if spec.depends_on_past and not published and days[n + 1:]:
            # Airflow's depends_on_past: a later day would read a previous day this request did not publish.
            log_not_attempted(context, spec.name, days[n + 1:], key)
            return


def _gate_day(
    context: dg.OpExecutionContext,
    graph: AssetGraph,
    spec: DeclaredAsset,
    backfill: Any,
    catalog: Catalog,
    run_ids: Mapping[str, str],
    planned: Mapping[str, list[str]],
    key: str,
    user_config: Any,
    upstream_in_chunk: list[str],
    first_of_step: bool,
):
    """Gate one day of the chunk, yielding its events; returns whether the day is published (by this attempt, an
    earlier one of this run, or left alone because it needs nothing)."""
    concluded = _concluded(catalog, spec.name, key, run_ids[spec.name])
    if concluded is not None:
        context.log.info(f"{spec.name} {key}: already concluded by an earlier attempt of this run")
        return concluded in VERIFIED
    missing = [u for u in upstream_in_chunk if key in planned[u] and not _published_by(catalog, u, key, run_ids[u])]
    if missing:
        # Computing from the version still serving would silently mix old upstream into this request.
        context.log.warning(f"{spec.name} {key}: not written — upstream {', '.join(missing)} of this run "
                            "was not published")
        return False
    # An op job plans no materialization: without this, Dagster would never show a day this run rejects
    # as Failed (nor the day in progress while it computes).
    report_materialization_planned(
        context.instance, context.run.run_id, context.run.job_name, str(context.op_handle), spec.name, key
    )
    outcome = gate_one(context, graph, spec, backfill, key, user_config, first_of_step)
    if outcome is None:
        return True  # left alone with nothing serving it (only runs of a backfill launched from Dagster are)
    # Not blocking in Dagster's sense here: a failed blocking evaluation would fail the op, and the op must
    # complete so that the days its upstream did publish flow on (the verdict op fails the run).
    yield from day_events(context.instance, spec.name, key, outcome, context.run.run_id, blocking=None)
    return bool(outcome.published)


def build_verdict_op(graph: AssetGraph, config_classes: Mapping[str, type[dg.Config]]) -> dg.OpDefinition:
    @dg.op(
        name=VERDICT_OP,
        ins={f"after_{node_name(a)}": dg.In(dg.Nothing) for a in graph.chunk_assets},
        description="Fails the run, naming them, when any planned day of the chunk was not published.",
        required_resource_keys={BACKFILL_RESOURCE},
    )
    def chunk_verdict(context: dg.OpExecutionContext) -> None:
        catalog = getattr(context.resources, BACKFILL_RESOURCE).catalog()
        run_ids = logical_runs_of_chunk(context, graph, catalog, config_classes, list(graph.chunk_assets))
        reached = {
            (v.asset, v.partition_key): (v.state, v.version_id, v.error)
            for run_id in sorted(set(run_ids.values()))
            for v in catalog.versions_of_run(run_id)
            if run_ids.get(v.asset) == run_id
        }
        problems: list[str] = []
        total = 0
        for asset, days in planned_days(context.run.run_config, graph).items():
            unpublished: str | None = None  # a depends-on-past asset's first day of this chunk not published
            for key in sorted(days) if graph[asset].depends_on_past else days:
                total += 1
                state, version_id, error = reached.get((asset, key), (None, None, None))
                if state is not None and VersionState(state) in VERIFIED:
                    continue
                if state == VersionState.REJECTED.value:
                    problems.append(f"{asset} {key} REJECTED ({version_id}: {error})")
                elif unpublished is not None:
                    problems.append(f"{asset} {key} not attempted (previous day {unpublished} not published)")
                else:
                    problems.append(f"{asset} {key} not written (upstream not published)")
                unpublished = unpublished or (key if graph[asset].depends_on_past else None)
        if problems:
            raise dg.Failure(
                description=f"{len(problems)} of {total} cell(s) of this chunk not published, the rest published; "
                "previous versions keep serving: " + "; ".join(problems),
                allow_retries=False,
            )
        context.log.info(f"all {total} cell(s) of this chunk published")

    return chunk_verdict


def build_chunk_job(
    graph: AssetGraph,
    executor: dg.ExecutorDefinition,
    config_classes: Mapping[str, type[dg.Config]] | None = None,
) -> dg.JobDefinition:
    """``config_classes``: asset → its ``gated_asset(config=...)`` class, whose fields its chunk op takes too.
    One op per data asset (side effects run alone, under their own authorization); a run gives days to some."""
    assets = graph.chunk_assets
    ops = {asset: build_chunk_op(graph[asset], graph, config_classes) for asset in assets}
    verdict = build_verdict_op(graph, dict(config_classes or {}))

    @dg.job(
        name=CHUNK_JOB,
        executor_def=executor,
        description="A batched backfill run: consecutive days of every batchable asset, or of one depends-on-past "
        "asset in order, each day gated alone.",
    )
    def backfill_chunk():
        done: dict[str, Any] = {}
        for asset in assets:  # the graph's order is topological
            upstream = [u for u in graph[asset].upstream if u in assets]
            done[asset] = ops[asset](**{f"after_{node_name(u)}": done[u] for u in upstream})
        verdict(**{f"after_{node_name(a)}": done[a] for a in assets})

    return backfill_chunk
