"""The instance config the library ships (``backfill_assets/instance/dagster.yaml``, package data): copied into a
new ``DAGSTER_HOME``; for a home that already has a ``dagster.yaml``, the blocks the library needs that it lacks,
named, so a user adds them instead of running without them and never knowing."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

INSTANCE_YAML = "dagster.yaml"
# What the library's promises rest on; storage, telemetry and the rest stay the user's choice.
NEEDED_BLOCKS = ("run_coordinator", "run_launcher", "concurrency", "sensors", "run_monitoring")
# Blocks whose class matters: another class there is named too.
CLASS_BLOCKS = ("run_coordinator", "run_launcher")
# The run-queue limit that keeps one team's backfills from taking the whole lane (docs/OPERATIONS.md, "Gates").
TEAM_TAG = "backfill/team"


def template_text() -> str:
    return resources.files("backfill_assets").joinpath("instance", INSTANCE_YAML).read_text(encoding="utf-8")


def template_path() -> str:
    """Where the shipped file is, for a message (inside an installed wheel or a checkout)."""
    return str(resources.files("backfill_assets").joinpath("instance", INSTANCE_YAML))


def install(home: Path) -> bool:
    """Give ``home`` the shipped dagster.yaml unless it has one; True when it was written."""
    target = home / INSTANCE_YAML
    if target.exists():
        return False
    target.write_text(template_text(), encoding="utf-8")
    return True


def missing_blocks(home: Path) -> list[str]:
    """One line per needed block the home's dagster.yaml lacks (or configures with another class)."""
    return [line for _, line in lacking_blocks(home)]


def lacking_blocks(home: Path) -> list[tuple[str, str]]:
    """(block, what is wrong with it) for each needed block the home's dagster.yaml lacks or sets otherwise."""
    try:
        present = yaml.safe_load((home / INSTANCE_YAML).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        return [("", f"{home / INSTANCE_YAML} cannot be read as YAML ({exc.__class__.__name__})")]
    shipped = yaml.safe_load(template_text())
    lacking = []
    for block in NEEDED_BLOCKS:
        if block not in present:
            lacking.append((block, f"no `{block}:` block"))
        elif block in CLASS_BLOCKS and _class_of(present[block]) != _class_of(shipped[block]):
            lacking.append(
                (block, f"`{block}:` is {_class_of(present[block]) or 'unset'}, not {_class_of(shipped[block])}")
            )
        elif block == "concurrency" and not _limits_per_team(present):
            lacking.append((block, f"`concurrency.runs.tag_concurrency_limits` has no per-team limit (key "
                                   f"{TEAM_TAG}, value applyLimitPerUniqueValue: true)"))
    return lacking


def _limits_per_team(config: dict) -> bool:
    """Whether the run queue (``concurrency.runs`` or the older ``run_queue``) limits runs per ``backfill/team``."""
    concurrency = config.get("concurrency")
    queues = [concurrency.get("runs") if isinstance(concurrency, dict) else None, config.get("run_queue")]
    entries = [e for q in queues if isinstance(q, dict) for e in q.get("tag_concurrency_limits") or []]
    return any(
        isinstance(e, dict) and e.get("key") == TEAM_TAG and isinstance(e.get("value"), dict)
        and e["value"].get("applyLimitPerUniqueValue") is True
        for e in entries
    )


def _class_of(block: object) -> str | None:
    return block.get("class") if isinstance(block, dict) else None


def blocks_text(names: list[str]) -> str:
    """The shipped file's text of the named top-level blocks, each with the comment lines just above it (why it is
    there), in the file's order: what a user pastes into a dagster.yaml of their own."""
    wanted = set(names)
    blocks: list[list[str]] = []
    current: list[str] | None = None
    comments: list[str] = []
    for line in template_text().splitlines():
        key = line.split(":", 1)[0] if line[:1].isalpha() and ":" in line else None
        if key is not None:
            current = [*comments, line] if key in wanted else None
            if current is not None:
                blocks.append(current)
            comments = []
        elif line.startswith("#"):
            comments.append(line)
        else:
            comments = []
            if current is not None and line.strip():
                current.append(line)
    return "\n\n".join("\n".join(block) for block in blocks) + "\n"
