"""The public API a Dagster user imports: ``__all__`` pinned, every name resolvable and visible to type checkers
(the ``TYPE_CHECKING`` imports match the lazy table), every exception exported, ``py.typed`` shipped, importing
the package loads no Dagster, and what ``backfill_definitions`` returns merges with a user's own definitions."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import subprocess
import sys
import typing
from pathlib import Path

import dagster as dg

import backfill_assets
import backfill_assets.service as service
from backfill_assets.engine.model import errors
from tests.orders import DEFS

PINNED = [
    "AccessPolicy", "AssetOwnedElsewhere",
    "Audit", "AuditResult", "BOOL", "BackfillAsset", "BackfillError", "BackfillResource", "Backfills",
    "BusinessCalendar", "CatalogBusy", "CatalogDamaged", "CatalogEmpty",
    "CatalogSchemaMismatch", "CleanupPolicy", "ClearInput", "CodeInputs", "DayOrder", "DownstreamPolicy",
    "FLOAT", "INT",
    "IllegalTransition", "IntegrityError", "Interval", "InvalidField", "InvalidInput",
    "ManifestMismatch", "NotAuthorized", "NotFound",
    "Order", "PUBLISHED_IO_MANAGER", "PlanError", "PublishConflict", "PublishedDataIOManager",
    "RefusedField", "ReprocessPolicy", "RequestInput", "RequestSource",
    "RunContext", "STRING", "Settings", "StorageError", "TIMESTAMP", "TargetBusy", "UnsafeName", "audit",
    "backfill_definitions", "backfills_for_instance", "daily_partitions_for",
    "gated_asset", "graph_of", "matches_schema", "not_empty", "retry_transient", "row_count",
    "run_external", "side_effect_asset", "sql_engine", "totals_match", "unique_key",
]
PACKAGE = Path(backfill_assets.__file__).parent


def test_all_is_pinned_and_every_name_resolves():
    assert backfill_assets.__all__ == PINNED  # adding or removing a public name is a decision: update PINNED
    for name in PINNED:
        assert getattr(backfill_assets, name) is not None
    assert set(PINNED) <= set(dir(backfill_assets))


def test_type_checkers_see_every_public_name_through_an_explicit_import():
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    [guard] = [n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING"]
    imported = {alias.name for node in guard.body for alias in node.names}
    assert imported == set(PINNED)


def test_every_exception_of_the_library_is_exported():
    defined = {name for name, value in vars(errors).items()
               if inspect.isclass(value) and issubclass(value, Exception) and value.__module__ == errors.__name__
               and name != "FieldMessage"}  # a mixin of InvalidField and RefusedField, not raised on its own
    assert defined <= set(PINNED)


def test_the_package_is_typed():
    assert (PACKAGE / "py.typed").is_file()


def test_importing_the_package_and_its_names_table_loads_no_dagster():
    code = ("import sys, backfill_assets; backfill_assets.BusinessCalendar; backfill_assets.InvalidField; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dagster'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_the_definitions_merge_with_a_users_own_and_keep_their_graph(env):
    @dg.asset
    def team_dashboard() -> None:
        """A team's own asset, beside the backfill code location's."""

    merged = dg.Definitions.merge(DEFS, dg.Definitions(assets=[team_dashboard]))
    assert backfill_assets.graph_of(merged) is backfill_assets.graph_of(DEFS)
    assert merged.resolve_job_def("backfill_request") is not None
    assert dg.AssetKey("team_dashboard") in {spec.key for spec in merged.resolve_all_asset_specs()}
    backfills = backfill_assets.backfills_for_instance(merged, env.instance, env.catalog)
    assert backfills.graph is backfill_assets.graph_of(DEFS)


def test_every_record_the_service_returns_is_exported_from_backfill_assets_service():
    # A door or a caller names what it gets back by importing it from the service, never from the engine.

    def records(hint: object) -> set[type]:
        found = {hint} if isinstance(hint, type) and dataclasses.is_dataclass(hint) else set()
        return found.union(*(records(arg) for arg in typing.get_args(hint)))

    returned: set[type] = set()
    for name, method in vars(service.Backfills).items():
        if callable(method) and not name.startswith("_"):
            returned |= records(typing.get_type_hints(method).get("return"))
    assert returned and not {r.__name__ for r in returned} - set(service.__all__)
    assert all(getattr(service, name) is record for record in returned for name in [record.__name__])
