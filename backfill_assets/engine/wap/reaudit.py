"""Re-auditing the version that serves a day, read-only: what a run of an asset's checks alone does (Dagster's
"Execute" on an asset's Checks tab selects the checks and not the asset).

It never writes a version, records a read or moves a pointer: the serving version's file is read and verified as
every reader verifies it, and the asset's audits judge it again with the inputs that version was computed from
(the upstream versions it recorded reading, which may no longer be the ones serving). An audit that needs what only
a computation has (the attempt's ``run``, the step's ``config``) is not re-run: it is listed in ``not_rerun`` and
reports nothing, rather than a failure that would say the data is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from backfill_assets.engine.model.errors import BackfillError, InvalidInput
from backfill_assets.engine.model.graph import INTERVAL_ARG, PREVIOUS_ARG, AssetGraph, DeclaredAsset
from backfill_assets.engine.model.identity import parameter_name_of
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import CHECK_FILE_INTEGRITY, CheckOutcome


@dataclass(frozen=True)
class ReAudit:
    """The serving version of one day judged again (``version`` None: nothing serves the day, nothing judged)."""

    asset: str
    partition_key: str
    version: Version | None
    checks: tuple[CheckOutcome, ...] = ()
    not_rerun: tuple[str, ...] = ()  # audits that need what only a computation has (why in each line)


def reaudit_serving(
    catalog: Catalog, warehouse: Warehouse, graph: AssetGraph, spec: DeclaredAsset, key: str,
    resources: Mapping[str, Any],
) -> ReAudit:
    serving = catalog.current(spec.name, key)
    if serving is None:
        return ReAudit(spec.name, key, None)
    try:
        frame = warehouse.read_version(serving)
        available = _inputs_read_by(catalog, warehouse, graph, spec, serving, resources)
    except BackfillError as exc:  # its file, or an input's, no longer verifies: that is the finding
        failed = CheckOutcome(CHECK_FILE_INTEGRITY, False, f"re-audit of {serving.version_id}: {exc}"[:1000])
        return ReAudit(spec.name, key, serving, (failed,))
    checks: list[CheckOutcome] = []
    not_rerun: list[str] = []
    for audit in spec.audits:
        try:
            checks.append(audit.evaluate(frame, available, spec))
        except InvalidInput as exc:
            not_rerun.append(f"{audit.name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - an audit that crashes on the data fails, as in the gate
            checks.append(CheckOutcome(audit.name, False, f"audit raised {type(exc).__name__}: {exc}"[:500]))
    checks.append(CheckOutcome(
        CHECK_FILE_INTEGRITY, True, "file and manifest match the catalog (read again)",
        {"sha256": serving.sha256, "rows": serving.rows},
    ))
    return ReAudit(spec.name, key, serving, tuple(checks), tuple(not_rerun))


def _inputs_read_by(
    catalog: Catalog, warehouse: Warehouse, graph: AssetGraph, spec: DeclaredAsset, version: Version,
    resources: Mapping[str, Any],
) -> dict[str, Any]:
    """What the transform was given when ``version`` was computed, from the inputs it recorded (verified)."""
    key = version.partition_key
    recorded = version.input_versions or {}
    available: dict[str, Any] = {INTERVAL_ARG: graph.calendar.interval(key), **resources}
    for upstream in spec.upstream:
        available[parameter_name_of(upstream)] = _read_recorded(catalog, warehouse, recorded.get(f"{upstream}/{key}"))
    if spec.depends_on_past:
        previous_key = graph.calendar.previous_key(key)
        previous_id = recorded.get(f"{spec.name}/{previous_key}") if previous_key else None
        available[PREVIOUS_ARG] = _read_recorded(catalog, warehouse, previous_id)
    return available


def _read_recorded(catalog: Catalog, warehouse: Warehouse, version_id: str | None) -> Any:
    if version_id is None:
        return None
    return warehouse.read_version(catalog.get(version_id))
