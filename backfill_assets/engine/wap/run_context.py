"""The ``run`` a transform, its audits and its fingerprint receive: the begun attempt's identity and location, with
its engine ids recorded in the catalog (``engine/model/run_context.py`` says what it carries)."""

from __future__ import annotations

from backfill_assets.engine.model.run_context import RunContext
from backfill_assets.engine.store.engine_refs import EngineRefs
from backfill_assets.engine.wap.gate import Gate


def run_context_of(gate: Gate) -> RunContext:
    """The run context of a gate whose attempt has begun (its version id and attempt number are known)."""
    identity = gate.identity
    version_id, attempt_no = gate.version_id, gate.attempt_no
    location = gate.warehouse.version_dir(identity.asset, identity.partition_key, identity.logical_run_id, attempt_no)
    refs = EngineRefs(gate.catalog)

    def record(engine: str, engine_id: str) -> None:
        refs.record(version_id, engine, engine_id)

    return RunContext(identity, attempt_no, version_id, str(location), record)
