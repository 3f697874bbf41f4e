"""Per-class trial and failure counts, written as JSON at the end of the session when asked.

A test opens a class with the ``trials`` fixture and runs each trial inside ``klass.trial(i)``: an exception in
a trial (a failed assertion, a timeout) counts as one failure of that class, the remaining trials still run,
and the test fails at the end listing every failed trial. So the counts in docs/RELIABILITY.md are measured,
not inferred from a pass/fail bit. A class may also tally what its trials measured (``klass.tally("lost
publishes", n)``: the S3 outages count lost, duplicated and partial publishes), rendered beside its row.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest

from . import mode
from .registry import BY_ID


@dataclass
class ClassResult:
    trials: int = 0
    failures: int = 0
    seconds: float = 0.0
    messages: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tallies: dict[str, int] = field(default_factory=dict)


RESULTS: dict[str, ClassResult] = {}
SESSION = {"started": time.time()}


class TrialClass:
    def __init__(self, class_id: str):
        if class_id not in BY_ID:
            raise KeyError(f"unknown fault class {class_id!r}; add it to tests/reliability/registry.py")
        self.class_id = class_id
        self.result = RESULTS.setdefault(class_id, ClassResult())
        self.failed: list[str] = []

    @contextmanager
    def trial(self, label: object) -> Iterator[None]:
        started = time.monotonic()
        self.result.trials += 1
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - every failure of a trial is counted, then reported
            self.result.failures += 1
            first = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            message = f"trial {label}: {first[:6000]}"
            self.result.messages.append(message[:300])
            self.failed.append(message + "\n" + "".join(traceback.format_tb(exc.__traceback__)[-3:]))
        finally:
            self.result.seconds += time.monotonic() - started

    def fail_all(self, labels: list[str], exc: BaseException) -> None:
        """A check shared by several trials failed: every one of them counts as failed (never undercounted)."""
        first = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        for label in labels:
            self.result.failures += 1
            self.result.messages.append(f"trial {label}: {first[:280]}")
        self.failed.append(f"trials {', '.join(labels)}: {first[:6000]}\n"
                           + "".join(traceback.format_tb(exc.__traceback__)[-3:]))

    def count(self, trials: int, failures: int = 0, message: str | None = None) -> None:
        """For trials counted elsewhere (hypothesis examples)."""
        self.result.trials += trials
        self.result.failures += failures
        if message:
            self.result.messages.append(message[:300])
            self.failed.append(message)

    def tally(self, name: str, count: int) -> None:
        """Add ``count`` to a measured total of the class (0 is recorded too: "counted, none" is the result)."""
        self.result.tallies[name] = self.result.tallies.get(name, 0) + int(count)

    def note(self, text: str) -> None:
        if text not in self.result.notes:
            self.result.notes.append(text)

    def finish(self) -> None:
        if self.failed:
            pytest.fail(
                f"{self.class_id}: {len(self.failed)} failed trial(s):\n\n" + "\n\n".join(self.failed),
                pytrace=False,
            )


def write_report(path: Path, exit_status: int | None = None) -> None:
    data = {
        "duration_seconds": round(time.time() - SESSION["started"]),
        "cpus": os.cpu_count(),
        "exit_status": exit_status,
        "mode": "slow" if mode.SLOW else "normal",
        "trials_per_class": mode.TRIALS,
        "hypothesis_examples": mode.EXAMPLES,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "classes": {
            cid: {
                "trials": r.trials,
                "failures": r.failures,
                "seconds": round(r.seconds, 1),
                "messages": r.messages[:10],
                "notes": r.notes,
                "tallies": r.tallies,
            }
            for cid, r in RESULTS.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
