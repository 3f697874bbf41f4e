"""What the Dagster UI shows of each version: materialization, observation and check-evaluation metadata.

Every event names the version it is about (``version_id``), its state when the event was recorded (``state``:
serving / rejected / superseded / rolled back) and the version serving the day (``serving_version_id``), so a
person can tell from the UI alone why a day still serves an older version:

- a published version: its materialization (with the table of its blocking checks) and check results that target
  that materialization;
- a rejected version: no materialization (the day keeps serving, and Dagster shows it Failed through the failed
  run), an observation of the rejected version on the day's partition page, and failed check results that target
  **no** materialization. Dagster can only point a check result at a materialization and has none of an
  unpublished version; the result's description and metadata say so rather than point at the serving one;
- a rollback (``backfill-assets rollback``, the catalog pointer moved back without a run): a runless
  materialization of the version now serving, naming the version rolled back from.
"""

from __future__ import annotations

from typing import Any, Iterator

import dagster as dg

from backfill_assets.engine.model.states import VERIFIED, VersionState
from backfill_assets.engine.store.catalog import Catalog, PointerMove, Version
from backfill_assets.engine.wap.audit import CheckOutcome
from backfill_assets.engine.wap.gate import GateOutcome
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.runs.dagster_adapter import materialization_of_version

STATE_LABELS = {
    VersionState.PUBLISHED: "serving",
    VersionState.REJECTED: "rejected",
    VersionState.SUPERSEDED: "superseded",
    VersionState.ROLLED_BACK: "rolled back",
    VersionState.ABANDONED: "abandoned",
}
# Said by every check result of a rejected version, and appended to every gated check's own description.
UNPUBLISHED_TARGET = (
    "none: the judged version was rejected, so never published nor materialized, and a Dagster check result can "
    "only target a materialization; the day's latest materialization is the version still serving, which this "
    "result did not judge"
)
CHECK_SPEC_NOTE = (
    "A failed result judged a version that was then rejected: it targets no materialization (Dagster has none of an "
    "unpublished version) and its metadata names the rejected version and the one still serving."
)


REJECTED_PREFIX = "rejected_"


def state_label(version: Version) -> str:
    state = VersionState(version.state)
    return STATE_LABELS.get(state, state.value.lower())


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def version_metadata(version: Version) -> dict[str, Any]:
    """The identity, place and four times of a version, as every event about it shows them."""
    v = version
    return {
        "version_id": v.version_id,
        "path": dg.MetadataValue.path(_text(v.path)),
        "rows": dg.MetadataValue.int(int(v.rows or 0)),
        "sha256": _text(v.sha256),
        "logical_run_id": v.logical_run_id,
        "dagster_run_id": _text(v.dagster_run_id),
        "attempt_no": dg.MetadataValue.int(int(v.attempt_no)),
        "request_id": _text(v.request_id),
        "lane": _text(v.lane),
        "code_version": _text(v.code_version),
        "params_digest": _text(v.params_digest),
        "interval_start": _text(v.interval_start),
        "interval_end": _text(v.interval_end),
        "requested_at": _text(v.requested_at),
        "started_at": _text(v.started_at),
        "ended_at": _text(v.ended_at),
        "published_at": _text(v.published_at),
        "input_versions": dg.MetadataValue.json(v.input_versions or {}),
    }


def checks_table(checks: list[CheckOutcome]) -> dg.MetadataValue:
    """The blocking checks that judged a version, one row each (the partition page shows it per day)."""
    return dg.MetadataValue.table(
        records=[dg.TableRecord({"check": c.name, "passed": c.passed, "description": c.description}) for c in checks],
        schema=dg.TableSchema(
            columns=[
                dg.TableColumn("check", "string"),
                dg.TableColumn("passed", "bool"),
                dg.TableColumn("description", "string"),
            ]
        ),
    )


def outcome_checks(version: Version) -> list[CheckOutcome]:
    """A version's check results as the catalog recorded them."""
    return [
        CheckOutcome(c["name"], bool(c["passed"]), c.get("description") or "")
        for c in version.checks or []
        if "name" in c
    ]


def published_metadata(outcome: GateOutcome) -> dict[str, Any]:
    """The materialization of a published version."""
    v = outcome.version
    serving = v.version_id if VersionState(v.state) is VersionState.PUBLISHED else outcome.serving_version_id
    return {
        **version_metadata(v),
        "state": state_label(v),
        "serving_version_id": _text(serving),
        "previous_version_id": _text(outcome.move.previous_version_id if outcome.move else None),
        "publish_seq": dg.MetadataValue.int(outcome.move.seq if outcome.move else 0),
        "checks": checks_table(outcome.checks),
        # False: a backfill launched from Dagster left the day alone and this reports the version still serving.
        "recomputed": dg.MetadataValue.bool(outcome.left_alone is None),
        **({"left_alone_because": _text(outcome.left_alone)} if outcome.left_alone else {}),
    }


def materialization(asset: str, key: str, outcome: GateOutcome) -> dg.AssetMaterialization:
    """A published day's materialization, for steps that write several days (range step, chunk op)."""
    return dg.AssetMaterialization(
        asset_key=asset_key(asset), partition=key, description=published_description(outcome),
        metadata=published_metadata(outcome),
    )


def published_description(outcome: GateOutcome) -> str:
    if outcome.left_alone:
        return f"{outcome.version.version_id} still serving, not recomputed: {outcome.left_alone}"
    previous = outcome.move.previous_version_id if outcome.move else None
    return f"{outcome.version.version_id} published and serving (replaced {previous or 'nothing'})"


def rejected_description(outcome: GateOutcome) -> str:
    serving = outcome.serving_version_id or "nothing (no version published yet)"
    return f"REJECTED {outcome.version.version_id}: {outcome.error}; still serving {serving}"


def rejection_observation(asset: str, key: str, outcome: GateOutcome) -> dg.AssetObservation:
    """The rejected version on the day's partition page (an observation: the day's materialization status stays
    what the failed run makes it, Failed, and its latest materialization the version still serving)."""
    return dg.AssetObservation(
        asset_key=asset_key(asset),
        partition=key,
        description=rejected_description(outcome),
        # Prefixed: the partition page shows the latest observation's entries beside the latest materialization's,
        # and an entry of the same name replaces the materialization's (the serving version's `version_id` would
        # read as the rejected one's).
        metadata={
            **{f"{REJECTED_PREFIX}{k}": v for k, v in version_metadata(outcome.version).items()},
            "serving_version_id": _text(outcome.serving_version_id),
            "failed_checks": ", ".join(outcome.failed_checks),
            f"{REJECTED_PREFIX}error": _text(outcome.error),
            f"{REJECTED_PREFIX}checks": checks_table(outcome.checks),
        },
    )


def check_metadata(outcome: GateOutcome, check: CheckOutcome) -> dict[str, Any]:
    """A check result's metadata: the check's own figures, the version it judged and what serves the day."""
    base = {k: v for k, v in check.metadata.items() if v is not None}
    judged = {"version_id": outcome.version.version_id, "state": state_label(outcome.version)}
    if outcome.published:
        return base | judged
    return base | judged | {
        "serving_version_id": _text(outcome.serving_version_id) or "none (no version published yet)",
        "target_materialization": UNPUBLISHED_TARGET,
    }


def check_description(outcome: GateOutcome, check: CheckOutcome) -> str:
    if outcome.left_alone:
        return f"{check.description} — as judged when {outcome.version.version_id} was published (not recomputed)"
    if outcome.published:
        return check.description
    serving = outcome.serving_version_id or "nothing"
    return (
        f"{check.description} — judged unpublished version {outcome.version.version_id} (rejected; "
        f"{serving} still serving). Target materialization: none (Dagster cannot point a result at an "
        "unpublished version)."
    )


def check_evaluations(
    asset: str,
    key: str,
    outcome: GateOutcome,
    target: Any = None,
    run_id: str | None = None,
    blocking: bool | None = None,
) -> list[dg.AssetCheckEvaluation]:
    """The check results of one version of one day. ``target``: the materialization of the judged version
    (``materialization_of_version``) for a published one, None for a rejected one."""
    extra = {"run_id": run_id} if run_id else {}
    return [
        dg.AssetCheckEvaluation(
            asset_key=asset_key(asset),
            check_name=check.name,
            passed=check.passed,
            partition=key,
            description=check_description(outcome, check),
            metadata=check_metadata(outcome, check) | extra,
            target_materialization_data=target,
            blocking=blocking,
        )
        for check in outcome.checks
    ]


def day_events(
    instance: dg.DagsterInstance, asset: str, key: str, outcome: GateOutcome, run_id: str, blocking: bool | None
) -> Iterator[dg.AssetMaterialization | dg.AssetObservation | dg.AssetCheckEvaluation]:
    """One day's events for a step that writes several days, to be yielded in order: a published day's
    materialization first, then its check results pointed at it (it is stored by the time the step resumes after
    the yield); a rejected day's check results (no target) and the observation of the rejected version."""
    if outcome.published:
        yield materialization(asset, key, outcome)
        target = materialization_of_version(instance, asset, key, outcome.version.version_id)
        yield from check_evaluations(asset, key, outcome, target, run_id, blocking)
    else:
        yield from check_evaluations(asset, key, outcome, None, run_id, blocking)
        yield rejection_observation(asset, key, outcome)


# ---- rollback -------------------------------------------------------------------------------------------------


def rollback_event(catalog: Catalog, move: PointerMove, reason: str) -> dg.AssetMaterialization | dg.AssetObservation:
    """What Dagster records of a rollback of one day.

    A materialization of the restored version, so the day's latest materialization names the version now
    serving — unless the day's newest attempt did not publish (rejected, abandoned or still writing): Dagster
    shows that day Failed (or in progress), which is what ``--reprocess failed`` would re-run, and a runless
    materialization would turn it Materialized; the rollback is then an observation.
    """
    restored = catalog.get(move.version_id)
    newest = catalog.versions_of(move.asset, move.partition_key)[-1]
    description = rollback_description(move, reason)
    metadata = rollback_metadata(restored, move, reason)
    if VersionState(newest.state) in VERIFIED:
        return dg.AssetMaterialization(
            asset_key=asset_key(move.asset), partition=move.partition_key, description=description, metadata=metadata
        )
    return dg.AssetObservation(
        asset_key=asset_key(move.asset),
        partition=move.partition_key,
        description=f"{description}; the newest attempt {newest.version_id} is {newest.state}, so the day stays "
        "Failed in Dagster",
        metadata=metadata | {"newest_attempt": newest.version_id, "newest_attempt_state": newest.state},
    )


def rollback_description(move: PointerMove, reason: str) -> str:
    return f"rolled back from {move.previous_version_id}: {move.version_id} serves again — {reason}"


def rollback_metadata(restored: Version, move: PointerMove, reason: str) -> dict[str, Any]:
    """A rollback's event metadata: the restored version, serving again, and the version rolled back from."""
    return {
        **version_metadata(restored),
        "state": state_label(restored),
        "serving_version_id": restored.version_id,
        "rolled_back_from": _text(move.previous_version_id),
        "rollback_reason": reason,
        "publish_seq": dg.MetadataValue.int(move.seq),
        "checks": checks_table(outcome_checks(restored)),
    }


def report_rollback(instance: dg.DagsterInstance, catalog: Catalog, move: PointerMove, reason: str) -> str:
    """Record the rollback in Dagster (a runless event); returns what was recorded."""
    event = rollback_event(catalog, move, reason)
    instance.report_runless_asset_event(event)
    return "materialization" if isinstance(event, dg.AssetMaterialization) else "observation"
