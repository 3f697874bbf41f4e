"""Alembic's script directories kept per process, for Dagster's SQLite storages: they ask alembic for the head
revision each time they open a database file.

Dagster checks a SQLite file's revision against its migrations' head when it opens the instance's run and schedule
files and every run's own event-log file (a new file per run), then stamps a new file with that head. Alembic
answers each question by building a ``ScriptDirectory``, which loads every revision script of the storage again
(80-odd files): 24 ms a question on a 2-core machine, so a run paid about 50 ms before its first event, and every
process opening an instance 50 ms more. The scripts belong to the installed Dagster and cannot change under a running
process, so the first ``ScriptDirectory`` built for a script location is the one every later question gets
(``python -m bench.micro.alembic_scripts`` measures both). Installed by the shipped dagster.yaml's SQLite storages
(``sqlite_engines.ConfiguredWithoutDirectory``), so a home of Dagster's own classes behaves as Dagster does.
"""

from __future__ import annotations

import threading
from typing import Any

from alembic.config import Config
from alembic.script import ScriptDirectory

_lock = threading.Lock()
_kept: dict[tuple[type, str | None, str | None], ScriptDirectory] = {}
_alembics_own = ScriptDirectory.from_config.__func__  # type: ignore[attr-defined]  # a classmethod's function


def _kept_script_directory(cls: type[ScriptDirectory], config: Config) -> ScriptDirectory:
    key = (cls, config.get_main_option("script_location"), config.get_main_option("version_locations"))
    with _lock:
        found = _kept.get(key)
        if found is None:
            found = _kept[key] = _alembics_own(cls, config)
        return found


def keep_alembic_script_directories() -> None:
    """From now on in this process, ``ScriptDirectory.from_config`` builds one directory per script location."""
    kept: Any = classmethod(_kept_script_directory)
    if ScriptDirectory.__dict__["from_config"].__func__ is not _kept_script_directory:
        ScriptDirectory.from_config = kept  # type: ignore[method-assign]
