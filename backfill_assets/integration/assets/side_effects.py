"""Side-effect assets (notifications, external APIs): excluded from backfills unless authorized, and delivered at
most once per idempotency key through the catalog's outbox, however often the step runs."""

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.access import AccessPolicy
from backfill_assets.engine.model.cells import Skip
from backfill_assets.engine.model.graph import INTERVAL_ARG, AssetGraph, DeclaredAsset, call_with
from backfill_assets.engine.plan.admission import is_launched_from_dagster
from backfill_assets.engine.store.admissions import Admissions
from backfill_assets.engine.store.outbox import idempotency_key, send_once
from backfill_assets.integration.assets.gated import user_resources
from backfill_assets.integration.assets.partitions import daily_partitions_for
from backfill_assets.integration.assets.redelivery import refuse_after_lost_workers
from backfill_assets.integration.resources import BACKFILL_RESOURCE
from backfill_assets.integration.runs.run_identity import lane_from_tags, request_id_from_tags

PAYLOAD_ARG = "payload"
KEY_ARG = "idempotency_key"


def unauthorized_side_effect(run_tags: dict[str, str], asset: str, access: AccessPolicy) -> str | None:
    """Why a backfill run may not act on the outside world, or None when it may: the request (or the launch tags
    of a run started from Dagster) must name the asset and an approver the code location's ``AccessPolicy``
    allows. Checked when the step runs, so a name taken off the list stops runs already queued."""
    if lane_from_tags(run_tags) != T.LANE_BACKFILL:
        return None
    allowed = {a.strip() for a in run_tags.get(T.ALLOW_SIDE_EFFECTS, "").split(",") if a.strip()}
    approver = (run_tags.get(T.APPROVED_BY) or "").strip()
    if asset not in allowed or not approver:
        return "side effect not authorized"
    if not access.may_approve(approver):
        return f"side effect not authorized: {approver!r} is not an approver ({', '.join(access.approvers)})"
    return None


def build_side_effect_asset(spec: DeclaredAsset, graph: AssetGraph) -> dg.AssetsDefinition:
    @dg.asset(
        name=spec.name,
        description=spec.description,
        partitions_def=daily_partitions_for(graph.calendar),
        deps=list(spec.upstream),
        owners=list(spec.owners),
        group_name=spec.group,
        tags={T.SIDE_EFFECT: "true"},
        kinds={"outbox"},
        required_resource_keys={BACKFILL_RESOURCE, *spec.resources},
        # A backfill launched from Dagster without the approval tags leaves the cell alone: no output.
        output_required=False,
    )
    def _side_effect(context: dg.AssetExecutionContext):
        catalog = getattr(context.resources, BACKFILL_RESOURCE).catalog()
        refuse_after_lost_workers(context, catalog, spec.name, [context.partition_key])
        result = _deliver(context, graph, spec)
        if result is not None:
            yield result

    return _side_effect


def _deliver(context: dg.AssetExecutionContext, graph: AssetGraph, spec: DeclaredAsset) -> dg.MaterializeResult | None:
    backfill = getattr(context.resources, BACKFILL_RESOURCE)
    run_tags = dict(context.run.tags)
    key = context.partition_key
    refusal = unauthorized_side_effect(run_tags, spec.name, graph.access)
    if refusal is not None:
        if is_launched_from_dagster(run_tags):
            reason = f"{refusal} (needs tags {T.ALLOW_SIDE_EFFECTS}={spec.name} and {T.APPROVED_BY})"
            Admissions(backfill.catalog()).record_skip(context.run.run_id, spec.name, key, Skip(reason))
            context.log.info(f"{spec.name} {key}: not run — {reason}")
            return None
        raise dg.Failure(
            description=(
                f"{spec.name} {key}: {refusal} for this backfill "
                f"(needs --allow-side-effects {spec.name} --approved-by NAME)"
            )
        )
    catalog = backfill.catalog()
    available = {INTERVAL_ARG: graph.calendar.interval(key), **user_resources(context, spec)}
    sources = []
    for upstream in spec.upstream:
        version = catalog.current(upstream, key)
        if version is None:
            raise dg.Failure(description=f"{spec.name} {key}: {upstream} {key} has no published version")
        available[upstream] = backfill.warehouse().read_version(version)
        catalog.record_external_read(f"{spec.name}:{context.run.run_id}", version)
        sources.append(version.version_id)
    payload = dict(call_with(spec.transform, available, f"payload of {spec.name}"))
    # Which published versions the message was made from: reconcile reports deliveries per upstream version.
    payload["source_version_id"] = ",".join(sources)
    if spec.idempotency_key is not None:
        what = f"idempotency key of {spec.name}"
        dedup = str(call_with(spec.idempotency_key, {**available, PAYLOAD_ARG: payload}, what))
    else:
        dedup = idempotency_key(spec.name, key, payload)

    def deliver(message: dict) -> None:
        call_with(spec.deliver, {**available, PAYLOAD_ARG: message, KEY_ARG: dedup}, f"deliver of {spec.name}")

    delivery = send_once(
        catalog,
        deliver,
        dedup,
        asset=spec.name,
        partition_key=key,
        payload=payload,
        dagster_run_id=context.run.run_id,
        request_id=request_id_from_tags(run_tags),
    )
    context.log.info(
        f"{spec.name} {key}: {'sent' if delivery.sent_now else 'already sent, nothing sent again'} "
        f"(idempotency key {delivery.idempotency_key})"
    )
    return dg.MaterializeResult(
        metadata={
            "idempotency_key": delivery.idempotency_key,
            "sent_now": delivery.sent_now,
            "sent_at": delivery.sent_at or "",
            "source_version_id": payload["source_version_id"],
        }
    )
