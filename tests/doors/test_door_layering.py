"""The doors see only the service: the CLI (backfill_assets/cli) and the Launchpad's job modules never import the
engine's store, planning or write-audit-publish packages — not at module level, not inside a function. What they
need of the engine's words (an input, a record's type, a status) the service names (service/vocabulary.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import backfill_assets

PACKAGE = Path(backfill_assets.__file__).resolve().parent
DOORS = sorted((PACKAGE / "cli").rglob("*.py")) + [
    PACKAGE / "integration" / "launchpad.py",
    PACKAGE / "integration" / "operation_jobs.py",
    PACKAGE / "integration" / "request_jobs.py",
]
FORBIDDEN = ("backfill_assets.engine.store", "backfill_assets.engine.plan", "backfill_assets.engine.wap")
# (door, module) pairs still allowed, each with a comment naming the service method that will replace it.
# Empty: every door goes through the service.
ALLOWED: set[tuple[str, str]] = set()


def _module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str) -> set[str]:
    """Every module ``source`` (the module ``module``) imports anywhere: ``import a.b``, ``from a import b`` (both
    ``a`` and ``a.b``: b may be a module), relative imports resolved, and ``import_module("a.b")`` with a literal."""
    package = module.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if called in {"import_module", "__import__"} and node.args and isinstance(node.args[0], ast.Constant):
                names.add(str(node.args[0].value))
    return names


def _forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f + ".") for f in FORBIDDEN)


def test_the_scanner_sees_imports_inside_functions_from_imports_and_relative_ones():
    source = (
        "def f():\n    from backfill_assets.engine.store.catalog import Catalog\n"
        "from backfill_assets.engine import plan\n"
        "from ..engine.wap import gate\n"
        "import importlib\nimportlib.import_module('backfill_assets.engine.store.ledger')\n"
        "from backfill_assets.engine.model import tags\n"
    )
    found = {m for m in imported_modules(source, "backfill_assets.cli.x") if _forbidden(m)}
    assert found == {"backfill_assets.engine.store.catalog", "backfill_assets.engine.store.catalog.Catalog",
                     "backfill_assets.engine.plan",
                     "backfill_assets.engine.wap", "backfill_assets.engine.wap.gate",
                     "backfill_assets.engine.store.ledger"}


def test_the_doors_have_modules_to_check():
    names = {p.name for p in DOORS}
    assert {"app.py", "data_commands.py", "demo_command.py", "launchpad.py", "operation_jobs.py",
            "request_jobs.py"} <= names


def test_no_door_imports_the_engines_store_plan_or_wap():
    found = {
        (str(path.relative_to(PACKAGE)), name)
        for path in DOORS
        for name in imported_modules(path.read_text(encoding="utf-8"), _module_of(path))
        if _forbidden(name)
    }
    assert found - ALLOWED == set()
    assert ALLOWED - found == set(), "an allowed import is gone: drop it from ALLOWED"
