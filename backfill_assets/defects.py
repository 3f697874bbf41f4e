"""Deliberate defects for demos, drills and tests (not part of a production code location).

    from backfill_assets.defects import defect_conf, with_defects

    defs = backfill_definitions(assets=with_defects(raw_orders, order_facts))
    # then: request create ... --conf '{"order_facts": {"defect_days": {"2022-10-17": "drop_rows"}}}'

Each wrapped gated asset takes ``defect`` (every interval of the run) and ``defect_days`` (day → defect) in its
config; on those days its frame is spoilt after its transform, so the gate rejects the version for real.
"""

from backfill_assets.integration.defects import Defect, DefectConfig, defect_conf, spoil, with_defects

__all__ = ["Defect", "DefectConfig", "defect_conf", "spoil", "with_defects"]
