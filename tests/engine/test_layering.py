"""backfill_assets.engine is plain Python: it never imports dagster, directly or through a dependency."""

from __future__ import annotations

import ast
import gc
import json
import subprocess
import sys
from pathlib import Path

import backfill_assets.engine

ENGINE_DIR = Path(backfill_assets.engine.__file__).resolve().parent
ENGINE_MODULES = sorted(ENGINE_DIR.rglob("*.py"))
# The catalog's schema revisions and Alembic's env.py: package data that Alembic loads, never imported as modules.
MIGRATIONS_DIR = ENGINE_DIR / "store" / "migrations"


def _parse(source: str) -> ast.Module:
    # CPython 3.11: a garbage collection during the AST's conversion can run finalizers of objects an
    # earlier test left behind (connections, instances), and ast.parse then fails with "AST constructor recursion
    # depth mismatch". No collection, no finalizers mid-parse.
    gc.disable()
    try:
        return ast.parse(source)
    finally:
        gc.enable()


def _imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(_parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call):
            # importlib.import_module("dagster") / __import__("dagster") with a literal name
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in {"import_module", "__import__"} and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    names.add(arg.value)
    return names


def _is_dagster(module: str) -> bool:
    top = module.split(".")[0]
    return top == "dagster" or top.startswith("dagster_")


def test_core_has_modules_to_check():
    assert {p.stem for p in ENGINE_MODULES} >= {"intervals", "identity", "catalog", "storage", "audit", "gate"}


def test_the_import_scanner_sees_dagster_imports():
    source = "import dagster\nfrom dagster import asset\nimport dagster_postgres as p\nfrom . import x\n"
    assert {m for m in _imported_modules(source) if _is_dagster(m)} == {"dagster", "dagster_postgres"}


def test_no_core_module_imports_dagster():
    offenders = {
        str(path.relative_to(ENGINE_DIR)): sorted(m for m in _imported_modules(path.read_text()) if _is_dagster(m))
        for path in ENGINE_MODULES
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def _fresh_import(package: str, above: tuple[str, ...] = ()) -> dict:
    """Import every module of ``package`` in a fresh interpreter: which it imported, and which modules of Dagster
    (or starting with one of ``above``) that loaded."""
    code = (
        "import importlib, json, pkgutil, sys\n"
        f"import {package} as package\n"
        f"names = sorted(m.name for m in pkgutil.walk_packages(package.__path__, '{package}.'))\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'dagster' or m.startswith('dagster_')\n"
        f"                or m.startswith({above!r}))\n"
        "print(json.dumps({'imported': names, 'above': loaded}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ENGINE_DIR.parent.parent
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_all_of_core_in_a_fresh_interpreter_does_not_load_dagster():
    report = _fresh_import("backfill_assets.engine")
    importable = [p for p in ENGINE_MODULES if p != ENGINE_DIR / "__init__.py" and MIGRATIONS_DIR not in p.parents]
    assert len(report["imported"]) == len(importable)
    assert report["above"] == []


# The one package allowed to import dagster._core (a module per job).
ADAPTER = "integration/runs/dagster_adapter/"


def test_only_the_adapter_package_imports_private_dagster_modules():
    package = ENGINE_DIR.parent
    private = {
        str(path.relative_to(package)): sorted(m for m in _imported_modules(path.read_text()) if "._" in m)
        for path in sorted(package.rglob("*.py"))
    }
    offenders = {path: mods for path, mods in private.items() if mods and not path.startswith(ADAPTER)}
    assert offenders == {}
    assert sorted({m for path, mods in private.items() if path.startswith(ADAPTER) for m in mods}) == [
        "dagster._cli.api",
        "dagster._core.definitions.asset_checks.asset_check_evaluation",
        # request create's own driver tick creates a sensor's run as the daemon would (sensor_runs.py).
        "dagster._core.definitions.selector",
        # deploy/'s PostgreSQL run storage, adding a run and its tags in one transaction.
        "dagster._core.errors",
        "dagster._core.events",
        "dagster._core.execution.backfill",
        # A step waiting for a pool slot sleeps instead of spinning (pool_waits.py).
        "dagster._core.execution.plan.instance_concurrency_context",
        # A spare run worker opens its instance from the serialized InstanceRef, typed as one.
        "dagster._core.instance.ref",
        "dagster._core.launcher",
        "dagster._core.remote_origin",
        "dagster._core.remote_representation.code_location",
        "dagster._core.scheduler.instigation",
        # The shipped event logs store a check evaluation with its event serialized once (check_evaluations.py).
        "dagster._core.storage.asset_check_execution_record",
        # The shipped dagster.yaml's SQLite storage: Dagster's, keeping its engines and connections, its pool
        # slots taken in one statement.
        # The checker's view of the classes two mixins are placed before (under TYPE_CHECKING only).
        "dagster._core.storage.event_log.base",
        "dagster._core.storage.event_log.schema",
        "dagster._core.storage.event_log.sql_event_log",
        "dagster._core.storage.event_log.sqlite.sqlite_event_log",
        "dagster._core.storage.runs.schema",
        "dagster._core.storage.runs.sqlite.sqlite_run_storage",
        "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage",
        "dagster._core.storage.tags",
        "dagster._core.types.loadable_target_origin",
        "dagster._core.workspace.workspace",
        # backfill-assets-daemon: dagster-daemon run with its loops woken by new work.
        "dagster._daemon",
        "dagster._daemon.backfill",
        "dagster._daemon.controller",
        "dagster._daemon.daemon",
        "dagster._daemon.run_coordinator.queued_run_coordinator_daemon",
        "dagster._daemon.sensor",
        # Its code servers started outside the terminal's process group (Dagster's one place that opens them).
        "dagster._grpc.server",
        "dagster._grpc.types",
        "dagster._serdes",
        "dagster._utils.concurrency",
        "dagster._utils.error",
        "dagster._utils.hosted_user_process",
        "dagster._utils.interrupts",
    ]
    # Private module names as strings (the warm worker's preload list) live in the adapter too.
    quoted = {path for path in private if not path.startswith(ADAPTER)
              and '"dagster._' in (package / path).read_text()}
    assert quoted == set()


def _package_import_graph() -> dict[str, set[str]]:
    """module → the package modules it imports, at module level or inside functions (a lazy import still
    makes a cycle: it only moves the failure to run time)."""
    package = ENGINE_DIR.parent
    modules = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        home = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(_parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = home.split(".")[: len(home.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
                for alias in node.names:
                    candidate = f"{target}.{alias.name}"
                    imported = candidate if candidate in modules else target
                    if imported in modules and imported != name:
                        graph[name].add(imported)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules and a.name != name)
    return graph


def test_the_package_has_no_import_cycle():
    graph = _package_import_graph()
    assert "backfill_assets.cli.app" in graph and graph["backfill_assets.cli.request_commands"]
    cycles, state, path = [], {}, []

    def visit(module: str) -> None:
        state[module] = "open"
        path.append(module)
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                cycles.append(" -> ".join(path[path.index(imported):] + [imported]))
            elif imported not in state:
                visit(imported)
        path.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []


# The one command that is about an example by definition: `backfill-assets demo` runs the orders example.
EXAMPLE_USERS = {"backfill_assets.cli.demo_command"}


def test_the_library_imports_no_example():
    graph = _package_import_graph()
    assert any(m.startswith("backfill_assets.examples.") for m in graph), "the examples are part of the package"
    offenders = {
        module: sorted(i for i in imported if i.startswith("backfill_assets.examples"))
        for module, imported in graph.items()
        if not module.startswith("backfill_assets.examples") and module not in EXAMPLE_USERS
    }
    assert {m: i for m, i in offenders.items() if i} == {}


# The public modules: the library's names, and the defects plug-in for demos and tests.
PUBLIC_MODULES = ("backfill_assets", "backfill_assets.defects")
DEFECTS_PLUGIN = "backfill_assets.integration.defects"


def test_examples_use_only_the_public_api():
    """An example imports the public modules and its own modules, nothing of the engine or the wiring."""
    graph = _package_import_graph()
    offenders = {
        module: sorted(
            i for i in imported
            if not i.startswith("backfill_assets.examples") and i not in PUBLIC_MODULES
        )
        for module, imported in graph.items()
        if module.startswith("backfill_assets.examples")
    }
    assert {m: i for m, i in offenders.items() if i} == {}


def test_the_engines_model_imports_nothing_above_it():
    """The model (records, names, intervals, requests) is the bottom layer: the store, the planner and the
    gate build on it, never the other way round."""
    graph = _package_import_graph()
    model = [m for m in graph if m.startswith("backfill_assets.engine.model")]
    assert len(model) > 10
    offenders = {m: sorted(i for i in graph[m] if not i.startswith("backfill_assets.engine.model")) for m in model}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_no_production_path_knows_the_defects_plugin():
    """Deliberate defects reach a step only as a wrapped asset's own config: the requests, the driver, the gate and
    the storage never import the plug-in; its public module, the examples and the demo command do."""
    graph = _package_import_graph()
    users = sorted(m for m, imported in graph.items()
                   if {DEFECTS_PLUGIN, "backfill_assets.defects"} & imported and m != "backfill_assets.defects")
    assert users and all(m.startswith("backfill_assets.examples") or m in EXAMPLE_USERS for m in users), users


def test_no_sql_outside_the_store():
    """SQLAlchemy and the catalog's tables are the store's business: every other module asks the store.
    (The examples' own demo sources are their own business, not the library's.)"""
    package = ENGINE_DIR.parent
    offenders = {}
    for path in sorted(package.rglob("*.py")):
        relative = str(path.relative_to(package))
        # The adapter's SQLAlchemy is Dagster's own storage (the SQLite storages' engines and connections, the
        # PostgreSQL run storage's transaction, the event log's statements built once), not the catalog's.
        dagster_storage = tuple(f"{ADAPTER}{name}.py" for name in
                                ("sqlite_engines", "sqlite_event_log", "sqlite_run_storage", "postgres_run_storage",
                                 "check_evaluations", "event_store"))
        if relative.startswith(("engine/store/", "examples/")) or relative in dagster_storage:
            continue
        sql = sorted(m for m in _imported_modules(path.read_text())
                     if m.split(".")[0] == "sqlalchemy" or m == "backfill_assets.engine.store.schema")
        if sql:
            offenders[relative] = sql
    assert offenders == {}


# The service declares what it needs from Dagster (service/ports.py) and is handed it: it never imports a layer
# above it, nor Dagster, lazily or not (an import inside a function or under TYPE_CHECKING counts).
SERVICE_DIR = ENGINE_DIR.parent / "service"
ABOVE_THE_SERVICE = ("backfill_assets.integration", "backfill_assets.cli")


def _absolute_imports(source: str, path: Path) -> set[str]:
    """Every module the ``source`` of the package module at ``path`` imports, anywhere in it: relative imports
    resolved, ``from package import name`` read as the submodule too, and the public package's lazy names
    (``backfill_assets._PUBLIC``) as the module they load."""
    import backfill_assets

    parts = list(path.relative_to(ENGINE_DIR.parent.parent).with_suffix("").parts)
    package = parts[:-1]  # an __init__'s package is its folder, as a module's is
    names = set(_imported_modules(source))
    for node in ast.walk(_parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        names.add(base)
        for alias in node.names:
            names.add(f"{base}.{alias.name}")
            if base == "backfill_assets" and alias.name in backfill_assets._PUBLIC:
                names.add(backfill_assets._PUBLIC[alias.name])
    return names


def _forbidden_in_the_service(module: str) -> bool:
    return _is_dagster(module) or any(module == top or module.startswith(top + ".") for top in ABOVE_THE_SERVICE)


def test_the_service_scanner_sees_lazy_relative_and_public_imports():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import dagster as dg\n"
              "def f():\n    from ..integration.runs import cancel\n    from backfill_assets import graph_of\n"
              "    from backfill_assets import cli\n    from .context import ServiceContext\n")
    found = _absolute_imports(source, SERVICE_DIR / "control.py")
    assert {m for m in found if _forbidden_in_the_service(m)} == {
        "dagster", "backfill_assets.integration.runs", "backfill_assets.integration.runs.cancel",
        "backfill_assets.integration.graphs", "backfill_assets.cli"}
    assert "backfill_assets.service.context" in found


def test_no_service_module_imports_dagster_the_integration_or_the_cli():
    modules = sorted(SERVICE_DIR.rglob("*.py"))
    assert {p.stem for p in modules} >= {"backfills", "context", "control", "ports", "reconciling", "versions"}
    offenders = {
        str(path.relative_to(SERVICE_DIR)): sorted(
            m for m in _absolute_imports(path.read_text(), path) if _forbidden_in_the_service(m))
        for path in modules
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_importing_all_of_the_service_in_a_fresh_interpreter_loads_neither_dagster_nor_the_integration():
    report = _fresh_import("backfill_assets.service", ("backfill_assets.integration", "backfill_assets.cli"))
    assert "backfill_assets.service.ports" in report["imported"]
    assert report["above"] == []
