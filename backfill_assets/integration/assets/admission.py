"""The admission check at the start of a gated step of a backfill launched from Dagster (the UI's dialog, the
asset graph, `dagster job backfill`): its launch tags' policy decides, as a request's driver would, whether the
step computes the cell; a cell left alone ends the step without a materialization, and says why."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Skip
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.model.overrides import skip_mark_reason
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.plan.admission import admit, adopted_request_id, is_launched_from_dagster
from backfill_assets.engine.plan.planning import SKIP, CellFacts
from backfill_assets.engine.store.admissions import Admissions
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.integration.runs.runs import other_run_writing
from backfill_assets.integration.step_context import StepContext


def cell_facts(
    context: StepContext, graph: AssetGraph, catalog: Catalog, asset: str, partition: str
) -> CellFacts:
    """What is true of the cell now, leaving out this run's own attempts."""
    # A re-execution's attempts are the root's run, or its own when it changed the computation (logical_run.py).
    own = {context.run.root_run_id or context.run.run_id, context.run.run_id}
    others = [v for v in catalog.versions_of(asset, partition) if v.logical_run_id not in own]
    latest = others[-1] if others else None
    mark = catalog.skip_marks([(asset, partition)]).get((asset, partition))
    return CellFacts(
        latest_state=latest.state if latest else None,
        latest_version_id=latest.version_id if latest else None,
        in_flight_run_id=other_run_writing(context.instance, graph, asset, partition, context.run),
        skip_mark=skip_mark_reason(mark) if mark else None,
    )


def admission_skip(
    context: StepContext, graph: AssetGraph, spec: DeclaredAsset, catalog: Catalog, partition: str
) -> str | None:
    """Why this step must leave the cell alone (recorded for the adoption sensor and logged), or None to compute.
    Only runs of a backfill launched from Dagster are checked: a request's own runs were decided by its driver."""
    tags = context.run.tags
    if not is_launched_from_dagster(tags):
        return None
    try:
        decision = admit(tags, spec, cell_facts(context, graph, catalog, spec.name, partition))
    except InvalidInput as exc:
        raise dg.Failure(description=f"{spec.name} {partition}: {exc}", allow_retries=False) from exc
    if decision.action != SKIP:
        return None
    skip = Skip(decision.reason, decision.skip_kind, decision.followed_run_id)
    Admissions(catalog).record_skip(context.run.run_id, spec.name, partition, skip)
    context.log.info(f"{spec.name} {partition}: not recomputed — {decision.reason}")
    return decision.reason


def frozen_code_version(context: StepContext, catalog: Catalog) -> str | None:
    """The code version the run's request froze: our driver tags its runs with it; a backfill launched from
    Dagster froze the one its adoption recorded (None while the adoption sensor has not seen it yet). A run of no
    request (production, a manual run) freezes nothing: its tag only says what it computed under."""
    tags = context.run.tags
    if tags.get(T.CODE_VERSION) and (tags.get(T.REQUEST_ID) or is_launched_from_dagster(tags)):
        return tags[T.CODE_VERSION]
    if not is_launched_from_dagster(tags):
        return None
    ledger = Ledger(catalog)
    request_id = adopted_request_id(tags[T.DAGSTER_BACKFILL])
    return ledger.get(request_id).code_version if ledger.exists(request_id) else None


def stamp_run_tags(context: StepContext, graph: AssetGraph, catalog: Catalog) -> dict[str, str]:
    """Give the run the request and code version tags it lacks, at its first gated step, on any instance: a run of
    a Dagster backfill (the UI's dialog, `dagster job backfill`) the request it is adopted as, and every run (those
    too, production's, `dagster asset materialize`'s) the code version it computes under — the one its request
    froze when there is one, so a later step still refuses another. Returns the tags added (none: it had them)."""
    tags = context.run.tags
    missing: dict[str, str] = {}
    if not tags.get(T.REQUEST_ID) and is_launched_from_dagster(tags):
        missing[T.REQUEST_ID] = adopted_request_id(tags[T.DAGSTER_BACKFILL])
    if tags.get(T.REQUEST_ID) or is_launched_from_dagster(tags):
        if not tags.get(T.CODE_VERSION):
            missing[T.CODE_VERSION] = frozen_code_version(context, catalog) or code_version(sources=graph.code_sources)
    else:
        # A run of no request says what it computes under; a re-execution copied its parent's tag, maybe stale.
        loaded = code_version(sources=graph.code_sources)
        if tags.get(T.CODE_VERSION) != loaded:
            missing[T.CODE_VERSION] = loaded
    if missing:
        # Read again: another step of the run may have stamped it meanwhile (Celery workers start steps at once).
        current = context.instance.get_run_by_id(context.run.run_id)
        missing = {k: v for k, v in missing.items() if current is None or current.tags.get(k) != v}
    if missing:
        context.instance.add_run_tags(context.run.run_id, missing)
    return missing
