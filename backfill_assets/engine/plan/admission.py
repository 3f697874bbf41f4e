"""The admission check at the start of a gated step of a backfill launched from Dagster (the UI's backfill
dialog, the asset graph, `dagster job backfill`): the same decision a request's driver takes at submit time
(``planning.decide``), from the backfill's launch tags, so a UI backfill keeps the request's promises."""

from __future__ import annotations

from typing import Mapping

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.day_order import DayOrder, declared_order, runs_serially, why_order, why_serial
from backfill_assets.engine.model.errors import InvalidInput, quoted
from backfill_assets.engine.model.graph import DeclaredAsset
from backfill_assets.engine.model.numbers import whole_number
from backfill_assets.engine.plan.planning import FOLLOW, SKIP, CellFacts, Decision, decide

# A backfill launched from Dagster without our tag recomputes what it selects: Dagster's own behaviour.
DEFAULT_LAUNCH_REPROCESS = M.ReprocessPolicy.COMPLETED
# Runs of one such backfill at once when neither its tag nor the run coordinator's config says otherwise
# (the same default as ``request create --max-active``).
DEFAULT_LAUNCH_MAX_ACTIVE = 2
# `backfill/downstream` takes the request's policies and `confirm` (``request create --downstream cascade
# --confirm-cascade``).
CONFIRM_CASCADE = "confirm"
LAUNCH_DOWNSTREAM_POLICIES = (*M.DOWNSTREAM_POLICIES, CONFIRM_CASCADE)


def is_launched_from_dagster(run_tags: Mapping[str, str]) -> bool:
    """A run of a Dagster backfill that no request of ours submitted (our driver tags its runs with its request;
    the run coordinator tags a Dagster backfill's runs with the adopted id ``dg-<backfill id>``)."""
    backfill_id = run_tags.get(T.DAGSTER_BACKFILL)
    if not backfill_id:
        return False
    return run_tags.get(T.REQUEST_ID) in (None, "", adopted_request_id(backfill_id))


def adopted_request_id(backfill_id: str) -> str:
    """The request a Dagster backfill is adopted as (``engine/plan/adoption.py``)."""
    return f"{T.ADOPTED_PREFIX}{backfill_id}"


def launch_policy(run_tags: Mapping[str, str], default_max_active: int = DEFAULT_LAUNCH_MAX_ACTIVE) -> M.RequestSpec:
    """The request policy a Dagster backfill's tags ask for; an unknown value is an error naming the tag."""
    reprocess = run_tags.get(T.REPROCESS) or DEFAULT_LAUNCH_REPROCESS
    order = run_tags.get(T.ORDER) or M.Order.FORWARD
    downstream = run_tags.get(T.DOWNSTREAM) or M.DownstreamPolicy.NONE
    checked = ((T.REPROCESS, reprocess, M.REPROCESS_POLICIES), (T.ORDER, order, M.ORDERS),
               (T.DOWNSTREAM, downstream, LAUNCH_DOWNSTREAM_POLICIES))
    for tag, value, allowed in checked:
        if value not in allowed:
            raise InvalidInput(f"tag {tag}={quoted(value)} is not one of {', '.join(allowed)}; nothing was computed")
    max_active = _max_active(run_tags.get(T.MAX_ACTIVE), default_max_active)
    allowed = tuple(a.strip() for a in (run_tags.get(T.ALLOW_SIDE_EFFECTS) or "").split(",") if a.strip())
    return M.RequestSpec(
        assets=(),
        partitions=(),
        reprocess=reprocess,
        max_active=max_active,
        order=order,
        # A launch has no flag to add: `confirm` is a cascade that waits for `request confirm`.
        downstream=M.DownstreamPolicy.CASCADE if downstream == CONFIRM_CASCADE else downstream,
        confirm_cascade=downstream == CONFIRM_CASCADE,
        allow_side_effects=allowed,
        approved_by=run_tags.get(T.APPROVED_BY) or None,
    )


def launch_tags_refusal(run_tags: Mapping[str, str]) -> str | None:
    """Why the steps of a Dagster backfill with these launch tags refuse to compute (one line naming the tag), or
    None when its tags are valid."""
    try:
        launch_policy(run_tags)
    except InvalidInput as exc:
        return str(exc)
    return None


def _max_active(value: str | None, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        return whole_number(value, f"tag {T.MAX_ACTIVE}", 1, M.MAX_ACTIVE_LIMIT)
    except InvalidInput as exc:
        raise InvalidInput(f"{exc}; nothing was computed") from None


def admit(run_tags: Mapping[str, str], asset: DeclaredAsset, facts: CellFacts) -> Decision:
    """Whether this step may compute the cell, and why (``planning.decide`` on the launch tags' policy)."""
    policy = launch_policy(run_tags)
    contradiction = contradicted_declaration(run_tags, asset)
    if contradiction:
        raise InvalidInput(f"{contradiction}; nothing was computed")
    decision = decide(policy, asset, facts)
    if decision.action == FOLLOW:
        # A step cannot wait for another run: it leaves the cell alone, and the adopted request follows that run.
        assert facts.in_flight_run_id is not None  # decide() follows only a run in flight
        return Decision(SKIP, f"in flight (run {facts.in_flight_run_id[:8]}) ({T.REPROCESS}={policy.reprocess})",
                        followed_run_id=facts.in_flight_run_id)
    if decision.action == SKIP:
        return Decision(SKIP, f"{decision.reason} ({T.REPROCESS}={policy.reprocess})")
    return decision


def contradicted_declaration(run_tags: Mapping[str, str], asset: DeclaredAsset) -> str | None:
    """Why a Dagster backfill's order or max_active tag contradicts what ``asset`` declares, or None. Left out,
    the tags take the declared order and pace (``adoption.adopted_spec``)."""
    order = run_tags.get(T.ORDER)
    declared = declared_order(asset)
    if order and declared != DayOrder.ANY and order != declared.value:
        return f"tag {T.ORDER}={order} is refused: {asset.name} {why_order(asset)}, so it runs {declared.value}"
    max_active = run_tags.get(T.MAX_ACTIVE) or ""
    if runs_serially(asset) and max_active and _max_active(max_active, 1) > 1:
        return (f"tag {T.MAX_ACTIVE}={max_active} is refused: {asset.name} {why_serial(asset)}, so its days run one "
                "at a time")
    return None
