"""The instance config the library ships (``backfill_assets/instance/dagster.yaml``, package data): copied into a
new ``DAGSTER_HOME``; for a home that already has a ``dagster.yaml``, what a promise needs that it lacks, named, so a
user adds it instead of running without it and never knowing.

Only plain Dagster config is needed: the run queue's limits (``concurrency``) and run monitoring. The library's own
classes (run coordinator, run launcher, SQLite storages) are accelerators: a home on Dagster's own classes, or any
other (a Kubernetes run launcher, PostgreSQL storage), keeps every promise, and is told in one line what each
accelerator it does not use would buy (docs/OPERATIONS.md, "On a stock instance")."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

INSTANCE_YAML = "dagster.yaml"
# What the library's promises rest on: plain Dagster config; storage, classes, telemetry and the rest stay the
# user's choice.
NEEDED_BLOCKS = ("concurrency", "run_monitoring")
# The run-queue limits a promise needs (docs/OPERATIONS.md, "Gates"): one run slot always left for production, and
# one team's backfills never taking the whole lane. (``backfill/slot`` lets the driver queue ahead; without it the
# driver submits only --max-active runs, so it is not needed.)
LANE_TAG = "backfill/lane"
TEAM_TAG = "backfill/team"
# Dagster's own tag on every run of a backfill it launches: a limit on the key alone holds them all to the lane's
# size under any run coordinator (only the library's puts them in the lane).
DAGSTER_BACKFILL_TAG = "dagster/backfill"
# The library's classes, each optional: the block, and what its class in the shipped file buys.
ACCELERATORS = (
    ("run_launcher", "runs start by forking a warm process instead of a new interpreter each"),
    ("run_coordinator", "backfills launched from Dagster (the UI, `dagster job backfill`) are paced by their "
                        "backfill/max_active and backfill/order tags and counted in the backfill lane and their "
                        "team's limit; without it their runs are queued unpaced"),
)
# Dagster's storage, extended (docs/PERFORMANCE.md, "Dagster's SQLite storage"): the classes of each kind, the file
# that names them, and what they buy.
SQLITE_STORAGE = (
    {"event_log_storage": "SqliteEventLogReusingEngines", "run_storage": "SqliteRunStorageKeepingConnections",
     "schedule_storage": "SqliteScheduleStorageKeepingConnections"},
    "the shipped file",
    "connections kept open (less CPU per run), and a pool slot taken by one step only (Dagster's SQLite claim "
    "can give one free slot to two steps)",
)
POSTGRES_STORAGE = (
    {"event_log_storage": "PostgresEventLogAssigningFreedSlots", "run_storage": "PostgresRunStorageAddingRunsWhole",
     "schedule_storage": "PostgresScheduleStorageRememberingSchema"},
    "deploy/postgres/dagster.yaml",
    "a pool slot freed while a step registers for it is given to that step, a run and its tags are added in "
    "one transaction (a database restart between Dagster's two inserts leaves a run no tag query finds), and a "
    "sensor's state is read on one connection instead of four",
)


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
    """One line per needed block the home's dagster.yaml lacks (or sets so that a promise fails)."""
    return [line for _, line in lacking_blocks(home)]


def lacking_blocks(home: Path) -> list[tuple[str, str]]:
    """(block, what is wrong with it) for each needed block the home's dagster.yaml lacks or sets otherwise. The
    classes a home names (launcher, coordinator, storages) are its own choice: never lacking (``accelerators``)."""
    present = _read(home)
    if isinstance(present, str):
        return [("", present)]
    lacking = []
    for block in NEEDED_BLOCKS:
        if block not in present:
            lacking.append((block, f"no `{block}:` block"))
    if "concurrency" in present:
        if not _limits_tag(present, LANE_TAG, per_value=False):
            lacking.append(("concurrency", f"`concurrency.runs.tag_concurrency_limits` has no backfill lane limit "
                                           f"(key {LANE_TAG}, value backfill): backfills may take every run slot, "
                                           "production's included"))
        if not _limits_key(present, DAGSTER_BACKFILL_TAG):
            lacking.append(("concurrency", f"`concurrency.runs.tag_concurrency_limits` has no limit on Dagster's "
                                           f"backfill runs (key {DAGSTER_BACKFILL_TAG}, no value): a backfill "
                                           "launched from the UI may take every run slot, production's included"))
        if not _limits_tag(present, TEAM_TAG, per_value=True):
            lacking.append(("concurrency", f"`concurrency.runs.tag_concurrency_limits` has no per-team limit (key "
                                           f"{TEAM_TAG}, value applyLimitPerUniqueValue: true)"))
    monitoring = present.get("run_monitoring")
    if "run_monitoring" in present and not (isinstance(monitoring, dict) and monitoring.get("enabled") is True):
        lacking.append(("run_monitoring", "`run_monitoring.enabled` is not true: a run whose process died stays "
                                          "STARTED, so its cells are never run again"))
    return lacking


def accelerators(home: Path) -> list[str]:
    """One phrase per library class the home's dagster.yaml does not use, naming it and what it buys; empty for
    the shipped file (or a file that cannot be read: ``lacking_blocks`` names that)."""
    present = _read(home)
    if isinstance(present, str):
        return []
    shipped = yaml.safe_load(template_text())
    unused = [
        f"{_class_of(shipped[block])} (`{block}:`): {buys}"
        for block, buys in ACCELERATORS
        if _class_of(present.get(block)) != _class_of(shipped[block])
    ]
    storage = _storage_kind(present)
    if storage is not None:
        classes, where, buys = storage
        if any(_class_of(present.get(block)) != name for block, name in classes.items()):
            unused.append(f"{', '.join(classes.values())} (storage blocks of {where}): {buys}")
    return unused


def _storage_kind(present: dict) -> tuple[dict[str, str], str, str] | None:
    """The library's storage classes for the home's kind of storage: SQLite (no storage block, or Dagster's SQLite
    classes), PostgreSQL (``storage: postgres`` or a PostgreSQL class); None for any other kind."""
    blocks = [present.get(b) for b in ("storage", "event_log_storage", "run_storage", "schedule_storage")]
    text = " ".join(yaml.safe_dump(b) for b in blocks if b is not None).lower()
    if "postgres" in text:
        return POSTGRES_STORAGE
    if not text or "sqlite" in text:
        return SQLITE_STORAGE
    return None


def accelerator_note(home: Path) -> str | None:
    """The one informational line about the accelerators a complete home does not use, or None."""
    unused = accelerators(home)
    if not unused:
        return None
    return (f"complete; optional accelerators it does not use: {'; '.join(unused)} (their blocks: "
            f"{template_path()}; docs/OPERATIONS.md, \"On a stock instance\")")


def _read(home: Path) -> dict | str:
    """The home's dagster.yaml as a mapping, or one line saying why it cannot be read."""
    try:
        present = yaml.safe_load((home / INSTANCE_YAML).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        return f"{home / INSTANCE_YAML} cannot be read as YAML ({exc.__class__.__name__})"
    if not isinstance(present, dict):
        return f"{home / INSTANCE_YAML} is not a mapping of blocks"
    return present


def _tag_limits(config: dict, key: str) -> list[dict]:
    """The run queue's (``concurrency.runs`` or the older ``run_queue``) tag limits on ``key``."""
    concurrency = config.get("concurrency")
    queues = [concurrency.get("runs") if isinstance(concurrency, dict) else None, config.get("run_queue")]
    entries = [e for q in queues if isinstance(q, dict) for e in q.get("tag_concurrency_limits") or []]
    return [e for e in entries if isinstance(e, dict) and e.get("key") == key]


def _limits_key(config: dict, key: str) -> bool:
    """Whether the run queue limits every run carrying tag ``key`` together, whatever its value."""
    return any(not entry.get("value") for entry in _tag_limits(config, key))


def _limits_tag(config: dict, key: str, per_value: bool) -> bool:
    """Whether the run queue has a limit on tag ``key``: one per unique value (``per_value``) or one on a value of
    its own."""
    for entry in _tag_limits(config, key):
        value = entry.get("value")
        unique = isinstance(value, dict) and value.get("applyLimitPerUniqueValue") is True
        if unique == per_value and (per_value or value is not None):
            return True
    return False


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
