"""Side-effect assets (notifications, external APIs): excluded from backfills unless authorized, and delivered at
most once per idempotency key through the catalog's outbox, however often the step runs."""

from collections.abc import Callable, Mapping
from datetime import datetime

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.access import AccessPolicy
from backfill_assets.engine.model.cells import Skip
from backfill_assets.engine.model.graph import INTERVAL_ARG, AssetGraph, DeclaredAsset, call_with
from backfill_assets.engine.model.identity import parameter_name_of
from backfill_assets.engine.model.intervals import BusinessCalendar, utc_now
from backfill_assets.engine.plan.admission import is_launched_from_dagster
from backfill_assets.engine.plan.catchup import production_delivers
from backfill_assets.engine.store.admissions import Admissions
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.outbox import idempotency_key, send_once
from backfill_assets.integration.assets.admission import stamp_run_tags
from backfill_assets.integration.assets.gated import user_resources
from backfill_assets.integration.assets.interrupted_steps import stopping_on_interrupt
from backfill_assets.integration.assets.partitions import daily_partitions_for
from backfill_assets.integration.assets.redelivery import refuse_after_lost_workers
from backfill_assets.integration.assets.retries import retry_policy_of
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.resources import BACKFILL_RESOURCE
from backfill_assets.integration.runs.run_identity import lane_from_tags, request_id_from_tags
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.production import PRODUCTION_RUN_KEY, PRODUCTION_SENSOR

PAYLOAD_ARG = "payload"
KEY_ARG = "idempotency_key"


def from_production_trigger(run_tags: Mapping[str, str], day: str) -> bool:
    """A run the production trigger launched for ``day``: Dagster's sensor daemon tags it with the sensor's name
    and the trigger's run key, and it carries no request. A person can type these tags too, so this alone never
    authorizes anything: the day must also be the one production delivers now (``production_delivers``)."""
    return (
        run_tags.get(T.DAGSTER_SENSOR) == PRODUCTION_SENSOR
        and run_tags.get(RUN_KEY_TAG) == PRODUCTION_RUN_KEY.format(day)
        and lane_from_tags(run_tags) == T.LANE_PRODUCTION
        and request_id_from_tags(run_tags) is None
    )


def approval_of(run_tags: Mapping[str, str], catalog: Catalog) -> tuple[frozenset[str], str, str]:
    """(side-effect assets allowed, approver, where that was read). A run of a request of ours is approved by the
    request's record in the catalog, never by its tags (which anyone launching a run can type); a run of a Dagster
    backfill or a run launched by hand, by its launch tags."""
    request_id = run_tags.get(T.REQUEST_ID)
    if request_id and not is_launched_from_dagster(run_tags):
        ledger = Ledger(catalog)
        if not ledger.exists(request_id):
            return frozenset(), "", f"request {request_id} (not in the catalog)"
        spec = ledger.get(request_id).spec
        return frozenset(spec.allow_side_effects), spec.approved_by or "", f"request {request_id}"
    allowed = frozenset(a.strip() for a in run_tags.get(T.ALLOW_SIDE_EFFECTS, "").split(",") if a.strip())
    return allowed, (run_tags.get(T.APPROVED_BY) or "").strip(), "launch tags"


def unauthorized_side_effect(
    run_tags: Mapping[str, str], asset: str, day: str, access: AccessPolicy, catalog: Catalog, now: datetime,
    calendar: BusinessCalendar,
) -> str | None:
    """Why this run may not act on the outside world for ``day``, or None when it may. Only the production
    trigger's run of the day production delivers now needs no approver; any other run (a request's, a Dagster
    backfill's, one launched by hand with any tags or none) needs the asset allowed and an approver the code
    location's ``AccessPolicy`` accepts. Checked when the step runs, so a name taken off the list stops runs
    already queued."""
    if from_production_trigger(run_tags, day) and production_delivers(calendar, day, now):
        return None
    allowed, approver, source = approval_of(run_tags, catalog)
    if asset not in allowed or not approver:
        return f"side effect not authorized: {day} is not the day production delivers now, and {source} " \
               f"names no approver for {asset}"
    if not access.may_approve(approver):
        return f"side effect not authorized: {approver!r} is not an approver ({', '.join(access.approvers)})"
    return None


def build_side_effect_asset(
    spec: DeclaredAsset, graph: AssetGraph, clock: Callable[[], datetime] = utc_now
) -> dg.AssetsDefinition:
    """``clock``: "now" for the production day (the code location's, as the production trigger's)."""

    @dg.asset(
        key=asset_key(spec.name),
        description=spec.description,
        partitions_def=daily_partitions_for(graph.calendar),
        deps=[asset_key(u) for u in spec.upstream],
        owners=list(spec.owners),
        group_name=spec.group,
        tags={T.SIDE_EFFECT: "true"},
        kinds={"outbox"},
        required_resource_keys={BACKFILL_RESOURCE, *spec.resources},
        # A backfill launched from Dagster without the approval tags leaves the cell alone: no output.
        output_required=False,
        # None unless declared: a retry delivers again under the same idempotency key.
        retry_policy=retry_policy_of(spec.retries),
    )
    def _side_effect(context: dg.AssetExecutionContext):
        yield from stopping_on_interrupt(context, _side_effect_step(context))

    def _side_effect_step(context: dg.AssetExecutionContext):
        catalog = getattr(context.resources, BACKFILL_RESOURCE).catalog()
        stamp_run_tags(context, graph, catalog)
        refuse_after_lost_workers(context, catalog, spec.name, [context.partition_key])
        result = _deliver(context, graph, spec, clock())
        if result is not None:
            yield result

    return _side_effect


def _refused(context: dg.AssetExecutionContext, spec: DeclaredAsset, catalog: Catalog, refusal: str) -> None:
    """Deliver nothing, and say why on one line: a Dagster backfill's cell is left alone (recorded, as its
    admission does), a production run's older day is passed over (its data is published; the step succeeds), and
    any other run fails."""
    run_tags = dict(context.run.tags)
    key = context.partition_key
    if is_launched_from_dagster(run_tags):
        reason = f"{refusal} (needs tags {T.ALLOW_SIDE_EFFECTS}={spec.name} and {T.APPROVED_BY})"
        Admissions(catalog).record_skip(context.run.run_id, spec.name, key, Skip(reason))
        context.log.info(f"{spec.name} {key}: not run — {reason}")
        return
    if from_production_trigger(run_tags, key):
        context.log.warning(f"{spec.name} {key}: not delivered — {refusal} (a request with "
                            f"--allow-side-effects {spec.name} --approved-by NAME delivers it)")
        return
    how = (f"--allow-side-effects {spec.name} --approved-by NAME" if request_id_from_tags(run_tags)
           else f"launch tags {T.ALLOW_SIDE_EFFECTS}={spec.name} and {T.APPROVED_BY}=NAME")
    raise dg.Failure(description=f"{spec.name} {key}: {refusal}; nothing delivered (needs {how})",
                     allow_retries=False)


def _deliver(
    context: dg.AssetExecutionContext, graph: AssetGraph, spec: DeclaredAsset, now: datetime
) -> dg.MaterializeResult | None:
    backfill = getattr(context.resources, BACKFILL_RESOURCE)
    run_tags = dict(context.run.tags)
    key = context.partition_key
    catalog = backfill.catalog()
    refusal = unauthorized_side_effect(run_tags, spec.name, key, graph.access, catalog, now, graph.calendar)
    if refusal is not None:
        _refused(context, spec, catalog, refusal)
        return None
    make_payload, deliver_to = spec.transform, spec.deliver
    if make_payload is None or deliver_to is None:  # side_effect_asset always declares both
        raise dg.Failure(description=f"{spec.name}: a side-effect asset without its payload or deliver function",
                         allow_retries=False)
    available = {INTERVAL_ARG: graph.calendar.interval(key), **user_resources(context, spec)}
    sources = []
    for upstream in spec.upstream:
        version = catalog.current(upstream, key)
        if version is None:
            raise dg.Failure(description=f"{spec.name} {key}: {upstream} {key} has no published version")
        available[parameter_name_of(upstream)] = backfill.warehouse().read_version(version)
        catalog.record_external_read(f"{spec.name}:{context.run.run_id}", version)
        sources.append(version.version_id)
    payload = dict(call_with(make_payload, available, f"payload of {spec.name}"))
    # Which published versions the message was made from: reconcile reports deliveries per upstream version.
    payload["source_version_id"] = ",".join(sources)
    if spec.idempotency_key is not None:
        what = f"idempotency key of {spec.name}"
        dedup = str(call_with(spec.idempotency_key, {**available, PAYLOAD_ARG: payload}, what))
    else:
        dedup = idempotency_key(spec.name, key, payload)

    def deliver(message: dict) -> None:
        call_with(deliver_to, {**available, PAYLOAD_ARG: message, KEY_ARG: dedup}, f"deliver of {spec.name}")

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
