"""Which code location the CLI works on, and its asset graph, learnt from the loaded definitions.

Resolution, as Dagster's own CLI does it: ``-m MODULE`` (or ``$BACKFILL_MODULE``), else ``[tool.dagster]
module_name`` in ./pyproject.toml, else the first ``python_module`` of ./workspace.yaml. The module is imported
and its ``dg.Definitions`` (``defs``, or the only one) must come from ``backfill_definitions``.
"""

from __future__ import annotations

import importlib
import sys
import tomllib
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph

PYPROJECT = "pyproject.toml"
WORKSPACE = "workspace.yaml"


@dataclass(frozen=True)
class CodeLocation:
    module_name: str
    module: ModuleType
    graph: AssetGraph
    defs: Any  # the dg.Definitions (typed loosely: this module imports Dagster only inside load_code_location)


def resolve_module_name(explicit: str | None, cwd: Path) -> str:
    if explicit:
        return explicit
    pyproject = cwd / PYPROJECT
    if pyproject.is_file():
        name = tomllib.loads(pyproject.read_text()).get("tool", {}).get("dagster", {}).get("module_name")
        if name:
            return str(name)
    workspace = cwd / WORKSPACE
    if workspace.is_file():
        for entry in (yaml.safe_load(workspace.read_text()) or {}).get("load_from", []) or []:
            module = (entry or {}).get("python_module")
            if isinstance(module, str):
                return module
            if isinstance(module, dict) and module.get("module_name"):
                return str(module["module_name"])
    raise InvalidInput(
        "no code location: pass -m MODULE (or set BACKFILL_MODULE), or run where pyproject.toml's [tool.dagster] "
        "module_name or workspace.yaml names one"
    )


def load_code_location(module_name: str, cwd: Path) -> CodeLocation:
    import dagster as dg  # only commands that need the graph pay for importing Dagster

    from backfill_assets.integration.graphs import graph_of

    if str(cwd) not in sys.path:
        sys.path.insert(0, str(cwd))  # as `dagster -m` does: a project's module is importable from its folder
    try:
        with warnings.catch_warnings():
            # Dagster's own preview/beta notices (partitioned check specs) are not the CLI user's to act on.
            warnings.simplefilter("ignore", dg.PreviewWarning)
            warnings.simplefilter("ignore", dg.BetaWarning)
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise InvalidInput(f"code location module {module_name!r} not found ({exc})") from exc
    found = [v for k, v in vars(module).items() if isinstance(v, dg.Definitions) and not k.startswith("_")]
    defs = getattr(module, "defs", None) if isinstance(getattr(module, "defs", None), dg.Definitions) else None
    if defs is None and len(found) == 1:
        defs = found[0]
    if defs is None:
        raise InvalidInput(f"{module_name} defines no `defs = backfill_definitions(...)`")
    graph = graph_of(defs)
    if graph is None:
        raise InvalidInput(f"{module_name}.defs was not built with backfill_assets.backfill_definitions")
    return CodeLocation(module_name, module, graph, defs)
