"""The bad-input fuzz harness: run one generated CLI command and assert it ended in one of the two allowed ways
(a correct result, or one ``error:`` line with nothing changed), and count hypothesis trials per fault class."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

BACKENDS = ("sqlite", "postgres")
SIDECARS = ("-wal", "-shm", "-journal")
# The code location's snapshot a command that loaded it leaves in the home (integration/location_cache.py): named
# by a digest of the module and folder, never by anything a command was given.
LOCATION_SNAPSHOT = re.compile(r"/\.backfill_cache/location-[0-9a-f]{16}\.json$")


def files_under(*roots: Path) -> set[str]:
    found = set()
    for root in roots:
        for dirpath, _dirs, filenames in os.walk(root):
            for name in filenames:
                path = os.path.join(dirpath, name)
                if not name.endswith(SIDECARS) and not LOCATION_SNAPSHOT.search(path):
                    found.add(path)
    return found


class Fuzz:
    def __init__(self, envs: dict, watched: list[Path], cwd: Path):
        self.envs = envs
        self.watched = watched
        self.cwd = cwd
        self.examples = 0

    def run(self, backend: str, args: list[str], ok_codes: tuple[int, ...] = (0,)):
        """Invoke the CLI; assert the two allowed outcomes; return the result (exit 0 / ok_codes) or None."""
        env = self.envs[backend].activate()
        self.examples += 1
        rows_before = env.table_rows()
        files_before = files_under(*self.watched)
        old = os.getcwd()
        os.chdir(self.cwd)
        try:
            result = env.cli(*args)
        finally:
            os.chdir(old)
        exc = result.exception
        assert exc is None or isinstance(exc, SystemExit), f"{args!r} raised {type(exc).__name__}: {exc}"
        assert "Traceback" not in result.output, result.output
        created = files_under(*self.watched) - files_before
        assert not created, f"{args!r} created files {sorted(created)}"
        if result.exit_code in ok_codes:
            return result
        lines = result.stderr.splitlines()
        assert result.exit_code == 2, f"{args!r}: exit {result.exit_code}: {result.output!r}"
        assert len(lines) == 1 and lines[0].startswith("error: "), f"{args!r}: stderr {result.stderr!r}"
        assert result.stdout == "", f"{args!r}: failed but printed {result.stdout!r}"
        assert env.table_rows() == rows_before, f"{args!r} failed but changed catalog rows"
        return None


def run_property(trials, class_id: str, fuzz: Fuzz, prop) -> None:
    with trials(class_id) as klass:
        fuzz.examples = 0
        started = time.monotonic()
        try:
            prop()
        except Exception as exc:  # noqa: BLE001 - the falsifying example is the report
            klass.count(fuzz.examples, 1, f"falsified after {fuzz.examples} example(s):\n{describe(exc)}")
        else:
            klass.count(fuzz.examples)
        finally:
            klass.result.seconds += time.monotonic() - started


def describe(exc: BaseException) -> str:
    """The failure with hypothesis' falsifying example(s), for every sub-failure of a group."""
    parts = []
    for sub in getattr(exc, "exceptions", None) or [exc]:
        notes = "\n".join(getattr(sub, "__notes__", []))
        parts.append(f"{type(sub).__name__}: {str(sub)[:2000]}\n{notes}")
    return "\n---\n".join(parts)
