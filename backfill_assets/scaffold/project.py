"""What ``backfill-assets init`` writes into a folder: a project Dagster's CLIs (``dagster``, ``dg``) and ours load,
its instance config, one gated asset and its test. Never overwrites: for a file that exists it says what that file
lacks (the instance config a promise needs, the pyproject tables the CLIs read) instead of silently skipping."""

from __future__ import annotations

import keyword
import re
import tomllib
from dataclasses import dataclass, field
from datetime import date
from enum import Enum
from pathlib import Path

import jinja2

from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.integration import instance_template
from backfill_assets.scaffold.requirement import library_requirement

HOME = ".dagster_home"
MODULE_NAME = re.compile(r"^[a-z_][a-z0-9_]*\Z")


class FileOutcome(str, Enum):
    WRITTEN = "written"
    KEPT = "kept"  # it existed and has what the project needs (``advice``: an optional note)
    INCOMPLETE = "incomplete"  # it existed, lacks something: ``advice`` says what to add


@dataclass(frozen=True)
class ScaffoldedFile:
    path: str  # relative to the project folder
    outcome: FileOutcome
    advice: str = ""


@dataclass(frozen=True)
class ProjectSpec:
    folder: Path
    module: str
    timezone: str = "UTC"
    start: str = "2024-01-01"

    @classmethod
    def of(cls, folder: Path, module: str | None, timezone: str, start: str) -> ProjectSpec:
        """Validated: the module a Python identifier (default: the folder's name), the calendar loadable."""
        name = module or folder.resolve().name.replace("-", "_").lower()
        if not MODULE_NAME.fullmatch(name) or keyword.iskeyword(name):
            raise InvalidField("{module} {name!r} is not a lowercase Python identifier: pass one", name=name)
        BusinessCalendar(timezone, start)  # a bad timezone or day is refused before anything is written
        return cls(folder, name, timezone, date.fromisoformat(start).isoformat())


@dataclass(frozen=True)
class ScaffoldResult:
    spec: ProjectSpec
    files: list[ScaffoldedFile] = field(default_factory=list)

    @property
    def incomplete(self) -> list[ScaffoldedFile]:
        return [f for f in self.files if f.outcome is FileOutcome.INCOMPLETE]


def _render(template: str, spec: ProjectSpec) -> str:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("backfill_assets.scaffold", "templates"),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template(template).render(
        module=spec.module, distribution=spec.module.replace("_", "-"), timezone=spec.timezone,
        start=spec.start, library_requirement=library_requirement(),
    )


def _files(spec: ProjectSpec) -> dict[str, str]:
    """Relative path -> content, in the order they are reported."""
    return {
        "pyproject.toml": _render("pyproject.toml.j2", spec),
        f"{HOME}/{instance_template.INSTANCE_YAML}": instance_template.template_text(),
        f"{spec.module}/__init__.py": "",
        f"{spec.module}/definitions.py": _render("definitions.py.j2", spec),
        "tests/test_definitions.py": _render("test_definitions.py.j2", spec),
        ".gitignore": _render("gitignore.j2", spec),
        "README.md": _render("README.md.j2", spec),
    }


def scaffold(spec: ProjectSpec) -> ScaffoldResult:
    """Write every file the folder lacks; check the ones it has."""
    spec.folder.mkdir(parents=True, exist_ok=True)
    result = ScaffoldResult(spec)
    for relative, content in _files(spec).items():
        target = spec.folder / relative
        if target.exists():
            result.files.append(_check_existing(relative, target, content))
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        result.files.append(ScaffoldedFile(relative, FileOutcome.WRITTEN))
    return result


def _check_existing(relative: str, target: Path, ours: str) -> ScaffoldedFile:
    if relative.endswith(instance_template.INSTANCE_YAML):
        return _check_instance(relative, target)
    if relative == "pyproject.toml":
        return _check_pyproject(relative, target, ours)
    return ScaffoldedFile(relative, FileOutcome.KEPT)


def _check_instance(relative: str, target: Path) -> ScaffoldedFile:
    lacking = instance_template.lacking_blocks(target.parent)
    if not lacking:  # complete; which optional accelerators it could use is a note, not a lack
        return ScaffoldedFile(relative, FileOutcome.KEPT, instance_template.accelerator_note(target.parent) or "")
    blocks = instance_template.blocks_text([block for block, _ in lacking if block])
    advice = "; ".join(line for _, line in lacking) + (
        f". Add or replace (from {instance_template.template_path()}):\n{blocks}" if blocks.strip() else ""
    )
    return ScaffoldedFile(relative, FileOutcome.INCOMPLETE, advice)


def _check_pyproject(relative: str, target: Path, ours: str) -> ScaffoldedFile:
    """The tables Dagster's CLIs read to find the code location: ``[tool.dagster]`` and ``[tool.dg]``."""
    try:
        tool = tomllib.loads(target.read_text(encoding="utf-8")).get("tool", {})
    except tomllib.TOMLDecodeError as exc:
        return ScaffoldedFile(relative, FileOutcome.INCOMPLETE, f"cannot be read as TOML ({exc})")
    lacking = [name for name in ("dagster", "dg") if name not in tool]
    if not lacking:
        return ScaffoldedFile(relative, FileOutcome.KEPT)
    wanted = tomllib.loads(ours)["tool"]
    tables = "\n".join(_toml_tables(name, wanted[name]) for name in lacking)
    return ScaffoldedFile(relative, FileOutcome.INCOMPLETE, f"no [tool.{', tool.'.join(lacking)}]. Add:\n{tables}")


def _toml_tables(name: str, table: dict) -> str:
    """``[tool.<name>]`` (and its sub-tables) as TOML text: plain strings only, which is all ours hold."""
    lines = [f"[tool.{name}]"]
    nested = {k: v for k, v in table.items() if isinstance(v, dict)}
    lines += [f'{k} = "{v}"' for k, v in table.items() if not isinstance(v, dict)]
    for sub, values in nested.items():
        lines += ["", f"[tool.{name}.{sub}]"] + [f'{k} = "{v}"' for k, v in values.items()]
    return "\n".join(lines) + "\n"
