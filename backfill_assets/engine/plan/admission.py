"""The admission check at the start of a gated step of a backfill launched from Dagster (the UI's backfill
dialog, the asset graph, `dagster job backfill`): the same decision a request's driver takes at submit time
(``planning.decide``), from the backfill's launch tags, so a UI backfill keeps the request's promises."""

from __future__ import annotations

from typing import Mapping

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetSpec
from backfill_assets.engine.plan.planning import SKIP, CellFacts, Decision, decide

# A backfill launched from Dagster without our tag recomputes what it selects: Dagster's own behaviour.
DEFAULT_LAUNCH_REPROCESS = M.ReprocessPolicy.COMPLETED


def is_launched_from_dagster(run_tags: Mapping[str, str]) -> bool:
    """A run of a Dagster backfill that no request of ours submitted (our driver tags its runs)."""
    return bool(run_tags.get(T.DAGSTER_BACKFILL)) and not run_tags.get(T.REQUEST_ID)


def launch_policy(run_tags: Mapping[str, str]) -> M.RequestSpec:
    """The request policy a Dagster backfill's tags ask for; an unknown value is an error naming the tag."""
    reprocess = run_tags.get(T.REPROCESS) or DEFAULT_LAUNCH_REPROCESS
    if reprocess not in M.REPROCESS_POLICIES:
        raise InvalidInput(
            f"tag {T.REPROCESS}={reprocess!r} is not one of {', '.join(M.REPROCESS_POLICIES)}; nothing was computed"
        )
    allowed = tuple(a.strip() for a in (run_tags.get(T.ALLOW_SIDE_EFFECTS) or "").split(",") if a.strip())
    return M.RequestSpec(
        assets=(),
        partitions=(),
        reprocess=reprocess,
        allow_side_effects=allowed,
        approved_by=run_tags.get(T.APPROVED_BY) or None,
    )


def admit(run_tags: Mapping[str, str], asset: AssetSpec, facts: CellFacts) -> Decision:
    """Whether this step may compute the cell, and why (``planning.decide`` on the launch tags' policy)."""
    policy = launch_policy(run_tags)
    decision = decide(policy, asset, facts)
    if decision.action == SKIP:
        return Decision(SKIP, f"{decision.reason} ({T.REPROCESS}={policy.reprocess})")
    return decision
