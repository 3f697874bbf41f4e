"""The side-effecting asset: sends the daily revenue summary through the outbox, at most once per content."""


import dagster as dg

from backfill_assets.core import tags as T
from backfill_assets.core.domain import DAILY_REVENUE, REVENUE_ALERT, SPECS
from backfill_assets.core.outbox import idempotency_key, send_once
from backfill_assets.core.transforms import revenue_alert_payload

from .partitions import daily_partitions
from .resources import BackfillResource
from .run_identity import lane_from_tags, request_id_from_tags


def side_effect_authorized(run_tags: dict[str, str], asset: str) -> bool:
    """Backfill runs may act on the outside world only when the request named the asset and an approver."""
    if lane_from_tags(run_tags) != T.LANE_BACKFILL:
        return True
    allowed = {a.strip() for a in run_tags.get(T.ALLOW_SIDE_EFFECTS, "").split(",") if a.strip()}
    return asset in allowed and bool(run_tags.get(T.APPROVED_BY))


@dg.asset(
    name=REVENUE_ALERT,
    description=SPECS[REVENUE_ALERT].description,
    partitions_def=daily_partitions,
    deps=[DAILY_REVENUE],
    owners=list(SPECS[REVENUE_ALERT].owners),
    group_name=SPECS[REVENUE_ALERT].group,
    tags={T.SIDE_EFFECT: "true"},
    kinds={"outbox"},
)
def revenue_alert(context: dg.AssetExecutionContext, backfill: BackfillResource) -> dg.MaterializeResult:
    run_tags = dict(context.run.tags)
    key = context.partition_key
    if not side_effect_authorized(run_tags, REVENUE_ALERT):
        raise dg.Failure(
            description=(
                f"{REVENUE_ALERT} {key}: side effect not authorized for this backfill "
                f"(needs --allow-side-effects {REVENUE_ALERT} --approved-by NAME)"
            )
        )
    catalog = backfill.catalog()
    revenue = catalog.current(DAILY_REVENUE, key)
    if revenue is None:
        raise dg.Failure(description=f"{REVENUE_ALERT} {key}: {DAILY_REVENUE} {key} has no published version")
    frame = backfill.warehouse().read_verified(revenue.path, revenue.sha256, revenue.rows)
    catalog.record_external_read(f"{REVENUE_ALERT}:{context.run.run_id}", revenue)
    payload = revenue_alert_payload(frame, key, revenue.version_id)
    delivery = send_once(
        catalog,
        backfill.settings().sink_path,
        idempotency_key(REVENUE_ALERT, key, payload),
        asset=REVENUE_ALERT,
        partition_key=key,
        payload=payload,
        run_id=context.run.run_id,
        request_id=request_id_from_tags(run_tags),
    )
    context.log.info(
        f"{REVENUE_ALERT} {key}: {'sent' if delivery.sent_now else 'already sent, nothing sent again'} "
        f"(idempotency key {delivery.idempotency_key})"
    )
    return dg.MaterializeResult(
        metadata={
            "idempotency_key": delivery.idempotency_key,
            "sent_now": delivery.sent_now,
            "sent_at": delivery.sent_at or "",
            "source_version_id": revenue.version_id,
        }
    )
