"""Factory for gated data assets: the step writes, audits and publishes (docs/ARCHITECTURE.md#gate)."""


import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.day_order import DayOrder, declared_order, runs_serially, why_order, why_serial
from backfill_assets.engine.model.errors import AssetOwnedElsewhere, BackfillError, TargetBusy
from backfill_assets.engine.model.gates import pool_for
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.model.identity import RunIdentity
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.wap.audit import check_names
from backfill_assets.engine.wap.compute import compute
from backfill_assets.engine.wap.faults import AFTER_EVENT, fault_point
from backfill_assets.engine.wap.gate import Gate, GateOutcome, earlier_publish, serving_again
from backfill_assets.integration.assets.admission import admission_skip, frozen_code_version, stamp_run_tags
from backfill_assets.integration.assets.checks_only import is_checks_only, run_checks_only
from backfill_assets.integration.assets.dashboard import (
    CHECK_SPEC_NOTE,
    check_description,
    check_evaluations,
    check_metadata,
    day_events,
    published_metadata,
    rejection_observation,
)
from backfill_assets.integration.assets.interrupted_steps import stopping_on_interrupt
from backfill_assets.integration.assets.partitions import daily_partitions_for
from backfill_assets.integration.assets.previous_day import previous_day_refusal
from backfill_assets.integration.assets.publish_guard import unless_run_stopped
from backfill_assets.integration.assets.redelivery import refuse_after_lost_workers
from backfill_assets.integration.assets.retries import retry_policy_of
from backfill_assets.integration.assets.step_slots import lease_guard, serial_day_slot, target_write_slot
from backfill_assets.integration.assets.table_sync import publishing_catalog, sync_tables_after_step
from backfill_assets.integration.assets.user_config import StepConfig, step_config, with_user_fields
from backfill_assets.integration.keys import asset_key, node_name
from backfill_assets.integration.lineage import lineage_observers
from backfill_assets.integration.published_io import PUBLISHED_IO_MANAGER
from backfill_assets.integration.resources import BACKFILL_RESOURCE, BackfillResource
from backfill_assets.integration.runs.run_identity import identity_from_context, logical_run_for
from backfill_assets.integration.step_context import StepContext


class GateConfig(dg.Config):
    """The library's own op config of a gated step: none; a configurable asset's own fields sit beside it."""


def check_specs_for(spec: DeclaredAsset, partitions_def: dg.PartitionsDefinition) -> list[dg.AssetCheckSpec]:
    """One blocking check per audit of the asset (the user's own among them), file integrity last."""
    with warnings.catch_warnings():
        # Partitioned check specs are a Dagster preview; the library chose them, a user's own warnings (pytest -W
        # error) should not fail on that choice.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return [
            dg.AssetCheckSpec(
                name, asset=asset_key(spec.name), blocking=True, partitions_def=partitions_def,
                description=f"{text} {CHECK_SPEC_NOTE}",
            )
            for name, text in check_names(spec)
        ]


def user_resources(context, spec: DeclaredAsset) -> dict:
    """The resources the asset's transform, audits and hooks ask for by name."""
    return {name: getattr(context.resources, name) for name in spec.resources}


def _check_results(outcome: GateOutcome) -> list[dg.AssetCheckResult]:
    """A published version's results: Dagster points each at the materialization the step has just recorded."""
    return [
        dg.AssetCheckResult(
            asset_key=asset_key(outcome.version.asset),
            check_name=c.name,
            passed=c.passed,
            description=check_description(outcome, c),
            metadata=check_metadata(outcome, c),
        )
        for c in outcome.checks
    ]


def log_logical_run(context, catalog, identity: RunIdentity) -> None:
    """Say in the step's log which logical run a re-execution's computation belongs to, and why (the decision
    ``identity_from_context`` made, read again from its cache)."""
    computation = (identity.code_version, identity.params_digest)
    chosen = logical_run_for(context.instance, context.run, catalog, identity.asset, computation)
    log = context.log.warning if chosen.changed_computation else context.log.info
    log(f"{identity.asset}: logical run {chosen.logical_run_id} — {chosen.reason}")


@dataclass(frozen=True)
class _Decided:
    outcome: GateOutcome | None  # None: the cell was left alone and nothing serves it


def _decided_without_computing(
    context: StepContext, graph: AssetGraph, spec: DeclaredAsset, backfill: BackfillResource, key: str,
    identity: RunIdentity,
) -> _Decided | None:
    """What the step reports without computing, if anything: the version an earlier attempt of this run already
    published, or, for a backfill launched from Dagster whose policy leaves the cell alone, the version serving."""
    earlier = earlier_publish(backfill.catalog(), identity)
    if earlier is not None:
        context.log.warning(
            f"{spec.name} {key}: {earlier.version.version_id} was already published by an earlier attempt of this "
            "run; reporting it instead of publishing again"
        )
        return _Decided(earlier)
    left_alone = admission_skip(context, graph, spec, backfill.catalog(), key)
    if left_alone is not None:
        # Reported, not skipped: Dagster then shows the day as the version serving it, and a downstream step of
        # the same run is not skipped by Dagster but decided by its own policy.
        return _Decided(serving_again(backfill.catalog(), spec.name, key, left_alone))
    return None


def gate_one(
    context: StepContext,
    graph: AssetGraph,
    spec: DeclaredAsset,
    backfill: BackfillResource,
    key: str,
    user_config: StepConfig | None = None,
    first_of_step: bool = True,
) -> GateOutcome | None:
    """Write, audit and publish-or-reject one partition. Errors abandon the attempt; rejections do not raise.
    A backfill launched from Dagster whose policy leaves the cell alone (``admission_skip``) gets the version still
    serving, reported again (``left_alone``), or None when nothing serves the cell.
    ``user_config``: what a configurable asset's step was given; its values are part of the version's params.
    ``first_of_step``: False for the later days of a step writing several, whose run was found running before its
    first day (each day's publish still reads it again)."""
    stopped = unless_run_stopped(
        context.instance, context.run.run_id, Ledger(backfill.catalog()), context.run.tags.get(T.REQUEST_ID)
    )
    if first_of_step and (reason := stopped()):
        # Dagster retries a step interrupted by a termination when it has a RetryPolicy (by default): the new
        # attempt of a cancelled run stops here instead of computing, and its run can end CANCELED.
        raise dg.Failure(description=f"{spec.name} {key}: {reason}", allow_retries=False)
    params: dict = {}
    if user_config is not None:
        # Normalized with every default, so a retry (or a run given the defaults explicitly) digests the same.
        params["config"] = user_config.values
    identity = identity_from_context(context, spec.name, params, key, graph, backfill.catalog())
    if first_of_step and context.run.root_run_id:
        log_logical_run(context, backfill.catalog(), identity)
    decided = _decided_without_computing(context, graph, spec, backfill, key, identity)
    if decided is not None:
        return decided.outcome
    if first_of_step and (why := previous_day_refusal(context, graph, spec, backfill.catalog(), key, stopped)):
        raise dg.Failure(description=f"{spec.name} {key}: not attempted — {why}", allow_retries=False)
    try:
        with serial_day_slot(context, spec, backfill.catalog(), key, stopped) as day_slot:
            return _write_audit_publish(context, graph, spec, backfill, key, identity, user_config,
                                        lease_guard(stopped, day_slot))
    except TargetBusy as exc:  # the day slot not freed in time (a target's is turned into a failure below)
        raise dg.Failure(description=f"{spec.name} {key}: not attempted — {exc}", allow_retries=False) from exc


def _write_audit_publish(
    context: StepContext, graph: AssetGraph, spec: DeclaredAsset, backfill: BackfillResource, key: str,
    identity: RunIdentity, user_config: StepConfig | None, guard: Callable[[], str | None],
) -> GateOutcome:
    """The gate proper: a new version written, audited, then published or rejected (``guard``: why it may no
    longer publish, asked again just before the CAS)."""
    catalog, before_publish = publishing_catalog(backfill)
    gate = Gate(
        catalog,
        backfill.warehouse(),
        spec,
        identity,
        frozen_code_version=frozen_code_version(context, backfill.catalog()),
        # Read again just before the publish CAS: a run marked cancelled while it computed (its code server did
        # not answer the termination, so nothing interrupted this worker) abandons its version instead.
        publish_guard=guard,
        observers=lineage_observers(context, backfill),
        before_publish=before_publish,
    )
    try:
        gate.begin()
    except AssetOwnedElsewhere as exc:  # another code location's asset: refused before writing, never retried
        raise dg.Failure(description=f"{spec.name} {key}: {exc}", allow_retries=False) from exc
    context.log.info(f"writing {gate.version_id} identity={json.dumps(gate.labels(), sort_keys=True)}")
    try:
        computed = compute(
            gate, graph, user_resources(context, spec), user_config.instance if user_config is not None else None
        )
        with target_write_slot(context, spec, backfill, key) as lease:
            # A lease lost before the publish means another step now writes in its slot.
            gate.publish_guard = lease_guard(guard, lease)
            checks = gate.write_and_audit(computed.frame, computed.available, computed.source_fingerprint)
            outcome = gate.conclude(checks)
    except BackfillError as exc:
        gate.abandon_if_unfinished(str(exc))
        # Not a transient fault: retrying cannot help, so no new attempt.
        raise dg.Failure(description=f"{spec.name} {key}: {exc}", allow_retries=False) from exc
    except BaseException as exc:
        gate.abandon_if_unfinished(f"{type(exc).__name__}: {exc}")
        raise
    if outcome.published:
        previous = outcome.move.previous_version_id if outcome.move else None
        context.log.info(f"published {gate.version_id} (replacing {previous})")
    else:
        context.log.error(_rejection(spec, key, outcome))
    return outcome


def _rejection(spec: DeclaredAsset, key: str, outcome: GateOutcome) -> str:
    return (
        f"{spec.name} {key}: REJECTED {outcome.version.version_id} — {outcome.error}; "
        f"still serving {outcome.serving_version_id or 'nothing (no version published yet)'}"
    )


def _run_single(
    context, graph: AssetGraph, spec: DeclaredAsset, backfill: BackfillResource, user_config: StepConfig | None
):
    key = context.partition_key
    outcome = gate_one(context, graph, spec, backfill, key, user_config)
    if outcome is None:
        return  # left alone with nothing serving: nothing to report; downstream steps of this run are skipped
    selected = {key.name for key in context.selected_asset_check_keys}
    if outcome.published:
        yield dg.MaterializeResult(asset_key=asset_key(spec.name), metadata=published_metadata(outcome))
        # Yielded after the materialization, not inside it: Dagster looks up the step's materialization again for
        # each result it finds inside a MaterializeResult before storing it (five more queries per asset-day).
        yield from (r for r in _check_results(outcome) if r.check_name in selected)
        fault_point(AFTER_EVENT)
        return
    # Evaluations rather than AssetCheckResults: Dagster would point those at the day's latest materialization,
    # the version still serving, which these results did not judge.
    evaluations = check_evaluations(spec.name, key, outcome, blocking=True)
    yield from (e for e in evaluations if e.check_name in selected)
    yield rejection_observation(spec.name, key, outcome)
    raise dg.Failure(
        description=_rejection(spec, key, outcome),
        metadata={
            "rejected_version_id": outcome.version.version_id,
            "failed_checks": ", ".join(outcome.failed_checks),
            "serving_version_id": outcome.serving_version_id or "",
        },
        allow_retries=False,
    )


def rejection_summary(asset: str, rejected: list[str], total: int) -> str:
    return (
        f"{asset}: {len(rejected)} of {total} day(s) REJECTED, the rest published; previous versions keep "
        f"serving: " + "; ".join(rejected)
    )


def log_not_attempted(context, asset: str, later: list[str], previous: str) -> None:
    """A depends-on-past step's warning for the days it leaves after one it did not publish (chunk and range runs)."""
    context.log.warning(f"{asset} {later[0]}..{later[-1]}: not attempted — previous day {previous} not published "
                        "(depends on past)")


def _run_batch(
    context, graph: AssetGraph, spec: DeclaredAsset, backfill: BackfillResource, user_config: StepConfig | None
):
    """A range run: every partition still gets its own version, checks, publish and reads, one frame at a time.

    Check evaluations are reported per partition (``dashboard.day_events``); only published partitions get a
    materialization; the step fails at the end naming the rejected days (so Dagster shows them Failed). A
    depends-on-past asset stops at the first day it does not publish, as a chunk run does: a later day would read
    a previous day this run did not publish.
    """
    keys = list(context.partition_keys)  # in the calendar's order
    rejected: list[str] = []
    attempted, not_attempted = len(keys), ""
    for n, key in enumerate(keys):
        outcome = gate_one(context, graph, spec, backfill, key, user_config, n == 0)
        if outcome is None:
            continue
        # The range run deselected the checks (a range step has no partition of its own): the step reports each
        # day's results itself, pointed at the version they judged.
        yield from day_events(context.instance, spec.name, key, outcome, context.run.run_id, blocking=True)
        if not outcome.published:
            rejected.append(f"{key} ({outcome.version.version_id}: {outcome.error})")
            if spec.depends_on_past and keys[n + 1:]:
                later, attempted = keys[n + 1:], n + 1
                not_attempted = f"; {later[0]}..{later[-1]} not attempted (previous day {key} not published)"
                log_not_attempted(context, spec.name, later, key)
                break
    if rejected:
        summary = rejection_summary(spec.name, rejected, attempted) + not_attempted
        raise dg.Failure(description=summary, allow_retries=False)


def build_gated_asset(
    spec: DeclaredAsset, graph: AssetGraph, config_class: type[dg.Config] | None = None
) -> dg.AssetsDefinition:
    """The asset's step; ``config_class`` (``gated_asset(config=...)``) adds the user's fields to its op config."""
    op_config = with_user_fields(GateConfig, config_class, spec.name)
    asset_tags = {T.DEPENDS_ON_PAST: "true"} if spec.depends_on_past else {}
    asset_tags.update(day_order_tags(spec))
    partitions_def = daily_partitions_for(graph.calendar)

    def _step(context: dg.AssetExecutionContext):
        backfill = getattr(context.resources, BACKFILL_RESOURCE)
        if is_checks_only(context):  # the Checks tab's Execute: a read-only re-audit, never a new version
            yield from run_checks_only(context, graph, spec, backfill, user_resources(context, spec))
            return
        stamp_run_tags(context, graph, backfill.catalog())  # every run says its request and code version
        user_config = step_config(context.op_execution_context.op_config, config_class)
        # A broker hands a dead worker's step to another worker: bounded, or a step that kills workers loops.
        refuse_after_lost_workers(context, backfill.catalog(), spec.name, context.partition_keys)
        try:
            if len(context.partition_keys) > 1:
                yield from _run_batch(context, graph, spec, backfill, user_config)
            else:
                yield from _run_single(context, graph, spec, backfill, user_config)
        finally:
            sync_tables_after_step(context.log, backfill, [spec.name])

    def _gated_with_config(context: dg.AssetExecutionContext, config: op_config):  # type: ignore[valid-type]
        del config  # read as the op's config by step_config, beside the library's own (none)
        yield from stopping_on_interrupt(context, _step(context))

    # No config at all rather than an empty Config class: Dagster reads an empty one through pydantic's
    # deprecated ``__fields__``, a DeprecationWarning in every run of the user's tests.
    def _gated_without_config(context: dg.AssetExecutionContext):
        yield from stopping_on_interrupt(context, _step(context))

    _gated = _gated_with_config if op_config.model_fields else _gated_without_config

    # A multi_asset only for can_subset: a batched (range) run deselects the checks, which the step then
    # reports per partition itself; @asset cannot be subset by checks.
    gated = dg.multi_asset(
        name=node_name(spec.name),
        specs=[
            dg.AssetSpec(
                asset_key(spec.name),
                description=spec.description,
                deps=[*(asset_key(k) for k in (*spec.upstream, *spec.external_upstream))],
                owners=list(spec.owners),
                group_name=spec.group,
                tags=asset_tags,
                partitions_def=partitions_def,
                kinds={"parquet"},
                metadata={**_column_schema(spec), "backfill order": pace_description(spec)},
                # A range run materializes partition by partition and never emits the output as a whole.
                skippable=True,
                # Ordinary downstream assets load the published days through it (integration/published_io.py).
            ).with_io_manager_key(PUBLISHED_IO_MANAGER)
        ],
        check_specs=check_specs_for(spec, partitions_def),
        can_subset=True,
        required_resource_keys={BACKFILL_RESOURCE, *spec.resources},
        pool=pool_for(spec.pool, spec.upstream),
        # Technical faults (lost connection, killed worker) get a new attempt of the same logical run, as often
        # as the asset declares; rejections and planning errors raise Failure(allow_retries=False).
        retry_policy=retry_policy_of(spec.retries),
    )
    return gated(_gated)


def day_order_tags(spec: DeclaredAsset) -> dict[str, str]:
    """The asset's declared order and parallel safety as asset tags (what a request defaults to)."""
    return {T.DAY_ORDER: declared_order(spec).value, T.PARALLEL_DAYS: str(not runs_serially(spec)).lower()}


def pace_description(spec: DeclaredAsset) -> str:
    """How a backfill request runs the asset's days, in words, for the asset page."""
    order = declared_order(spec)
    ordered = ("in any order (forward unless the request says backward)" if order == DayOrder.ANY
               else f"{order.value} only ({why_order(spec)})")
    pace = f"one day at a time ({why_serial(spec)})" if runs_serially(spec) else "several days at once"
    return f"days run {ordered}, {pace}; a request contradicting this is refused"


def _column_schema(spec: DeclaredAsset) -> dict:
    """The declared schema as Dagster's column schema, so the asset page shows it."""
    if not spec.schema:
        return {}
    columns = [dg.TableColumn(name, kind) for name, kind in spec.schema.items()]
    return {"dagster/column_schema": dg.TableSchema(columns=columns)}
