"""Factory for gated data assets: the step writes, audits and publishes (DESIGN §4)."""


import json
from enum import Enum
from typing import Optional

import dagster as dg

from backfill_assets.core import tags as T
from backfill_assets.core.audit import ALL_CHECKS, CHECK_DESCRIPTIONS
from backfill_assets.core.compute import compute
from backfill_assets.core.defects import validate_defect
from backfill_assets.core.domain import AssetSpec
from backfill_assets.core.errors import BackfillError
from backfill_assets.core.faults import AFTER_EVENT, fault_point
from backfill_assets.core.gate import Gate, GateOutcome

from .partitions import calendar, daily_partitions
from .resources import BackfillResource
from .run_identity import identity_from_context

SOURCE_POOL = "source_system"


class Defect(str, Enum):
    """Deliberate defects that make one blocking check fail for real (tests and the demo)."""

    drop_rows = "drop_rows"
    duplicate_keys = "duplicate_keys"
    bad_schema = "bad_schema"
    corrupt_file = "corrupt_file"


class GateConfig(dg.Config):
    inject_defect: Optional[Defect] = None


def check_specs_for(spec: AssetSpec) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            name,
            asset=spec.name,
            blocking=True,
            partitions_def=daily_partitions,
            description=CHECK_DESCRIPTIONS[name],
        )
        for name in ALL_CHECKS
    ]


def _materialization_metadata(outcome: GateOutcome) -> dict:
    v = outcome.version
    return {
        "version_id": v.version_id,
        "path": dg.MetadataValue.path(v.path),
        "rows": dg.MetadataValue.int(int(v.rows)),
        "sha256": v.sha256,
        "run_id": v.run_id,
        "attempt_no": dg.MetadataValue.int(int(v.attempt_no)),
        "request_id": v.request_id or "",
        "lane": v.lane or "",
        "code_version": v.code_version,
        "params_digest": v.params_digest,
        "interval_start": v.interval_start,
        "interval_end": v.interval_end,
        "requested_at": v.requested_at or "",
        "started_at": v.started_at,
        "ended_at": v.ended_at or "",
        "published_at": v.published_at or "",
        "previous_version_id": (outcome.move.previous_version_id if outcome.move else None) or "",
        "publish_seq": dg.MetadataValue.int(outcome.move.seq if outcome.move else 0),
        "input_versions": dg.MetadataValue.json(v.input_versions or {}),
    }


def _check_results(outcome: GateOutcome) -> list[dg.AssetCheckResult]:
    return [
        dg.AssetCheckResult(
            check_name=c.name,
            passed=c.passed,
            description=c.description,
            metadata={k: v for k, v in c.metadata.items() if v is not None}
            | {"version_id": outcome.version.version_id},
        )
        for c in outcome.checks
    ]


def build_gated_asset(spec: AssetSpec) -> dg.AssetsDefinition:
    asset_tags = {T.DEPENDS_ON_PAST: "true"} if spec.depends_on_past else {}

    @dg.asset(
        name=spec.name,
        description=spec.description,
        partitions_def=daily_partitions,
        deps=list(spec.upstream),
        check_specs=check_specs_for(spec),
        owners=list(spec.owners),
        group_name=spec.group,
        tags=asset_tags,
        pool=SOURCE_POOL if not spec.upstream else None,
        kinds={"parquet"},
    )
    def _gated(
        context: dg.AssetExecutionContext, config: GateConfig, backfill: BackfillResource
    ):
        defect = validate_defect(config.inject_defect.value if config.inject_defect else None)
        identity = identity_from_context(context, spec.name, {"inject_defect": defect})
        gate = Gate(
            backfill.catalog(),
            backfill.warehouse(),
            spec,
            identity,
            frozen_code_version=context.run.tags.get(T.CODE_VERSION),
        )
        gate.begin()
        context.log.info(f"writing {gate.version_id} identity={json.dumps(gate.labels(), sort_keys=True)}")
        try:
            computed = compute(gate, calendar, backfill.source())
            checks = gate.write_and_audit(
                computed.frame, computed.expected, defect, computed.source_fingerprint
            )
            outcome = gate.conclude(checks)
        except BackfillError as exc:
            gate.abandon_if_unfinished(str(exc))
            raise dg.Failure(description=f"{spec.name} {identity.partition_key}: {exc}") from exc
        except BaseException as exc:
            gate.abandon_if_unfinished(f"{type(exc).__name__}: {exc}")
            raise

        if outcome.published:
            context.log.info(
                f"published {gate.version_id} (replacing {outcome.move.previous_version_id if outcome.move else None})"
            )
            yield dg.MaterializeResult(
                metadata=_materialization_metadata(outcome), check_results=_check_results(outcome)
            )
            fault_point(AFTER_EVENT)
            return
        for result in _check_results(outcome):
            yield result
        message = (
            f"{spec.name} {identity.partition_key}: REJECTED {gate.version_id} — {outcome.error}; "
            f"still serving {outcome.serving_version_id or 'nothing (no version published yet)'}"
        )
        context.log.error(message)
        raise dg.Failure(
            description=message,
            metadata={
                "rejected_version_id": gate.version_id,
                "failed_checks": ", ".join(outcome.failed_checks),
                "serving_version_id": outcome.serving_version_id or "",
            },
        )

    return _gated
