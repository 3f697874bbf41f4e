"""An asset graph as plain data, and back: what freezing a request needs of a code location (its assets' lineage,
flags and calendar, its policies, where its code version starts) without importing it.

The graph read back (``SnapshotGraph``) has no callables: no transform, audit, hook or config schema. It serves the
operations that only read the graph's shape (``request create`` without ``--conf``); whoever keeps snapshots
(``integration/location_cache.py``) decides when one still describes the code location.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from backfill_assets.engine.model.access import AccessPolicy, CleanupPolicy
from backfill_assets.engine.model.asset_config import AssetConfig
from backfill_assets.engine.model.code_inputs import CodeInputs
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.model.retries import StepRetries

# Bumped whenever the record's form changes: a snapshot of another form is never read.
SNAPSHOT_FORM = 1
PLAIN_FIELDS = ("name", "description", "upstream", "primary_key", "depends_on_past", "side_effect", "owners", "group",
                "resources", "order", "parallel_days", "pool", "target", "external_upstream")


class SnapshotGraph(AssetGraph):
    """A graph read back from its snapshot: the same assets, calendar and policies, no callables; its code version
    starts from the modules the snapshot recorded."""

    def __init__(self, *args: Any, code_modules: dict[str, str | None], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._code_modules = dict(code_modules)

    def code_modules(self) -> dict[str, str | None]:
        return dict(self._code_modules)


def graph_record(graph: AssetGraph) -> dict[str, Any]:
    """``graph`` as JSON-ready data (``graph_of_record`` reads it back)."""
    return {
        "form": SNAPSHOT_FORM,
        "calendar": {"tz": graph.calendar.tz_name, "first_day": graph.calendar.first_day.isoformat()},
        "location": graph.location,
        "access": {"approvers": list(graph.access.approvers), "admins": list(graph.access.admins)},
        "retention_days": graph.cleanup.retention_days,
        "code_inputs": {k: list(v) for k, v in asdict(graph.code_inputs).items()},
        "code_modules": graph.code_modules(),
        "assets": [_asset_record(spec) for spec in graph],
    }


def _asset_record(spec: DeclaredAsset) -> dict[str, Any]:
    record: dict[str, Any] = {name: getattr(spec, name) for name in PLAIN_FIELDS}
    record["schema"] = dict(spec.schema)
    record["retries"] = asdict(spec.retries)
    record["config"] = None if spec.config is None else {"class_name": spec.config.class_name,
                                                         "fields": list(spec.config.fields)}
    return record


def graph_of_record(record: dict[str, Any]) -> SnapshotGraph:
    """The graph a snapshot describes; ``InvalidInput`` if it is of another form or no longer valid here (a code
    input's path gone)."""
    if record.get("form") != SNAPSHOT_FORM:
        raise InvalidInput(f"graph snapshot of form {record.get('form')!r}, not {SNAPSHOT_FORM}")
    assets = [_asset_of(a) for a in record["assets"]]
    return SnapshotGraph(
        BusinessCalendar(record["calendar"]["tz"], record["calendar"]["first_day"]), assets,
        access=AccessPolicy(**record["access"]), cleanup=CleanupPolicy(record["retention_days"]),
        location=record["location"], code_inputs=CodeInputs(**record["code_inputs"]),
        code_modules=record["code_modules"],
    )


def _asset_of(record: dict[str, Any]) -> DeclaredAsset:
    plain: dict[str, Any] = {name: tuple(v) if isinstance(v, list) else v for name, v in record.items()
                             if name in PLAIN_FIELDS}
    config = record["config"]
    return DeclaredAsset(
        **plain, schema=dict(record["schema"]), retries=StepRetries(**record["retries"]),
        config=None if config is None else AssetConfig(config["class_name"], tuple(config["fields"]),
                                                       _needs_the_code_location(record["name"])),
    )


def _needs_the_code_location(asset: str) -> Any:
    def normalize(_: Any) -> dict[str, Any]:
        raise InvalidInput(f"{asset}'s config is checked by the code location itself: load it to validate conf")

    return normalize
