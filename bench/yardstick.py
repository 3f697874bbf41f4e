"""How fast this machine's interpreter is right now: the CPU time of one fixed piece of pure-Python work.

The same suite took 1,205 CPU-seconds one day and 2,413 another on the "same" 2-core machine, the code unchanged:
the machine under the project moves (``import dagster`` took 0.6 s of CPU on one day, 1.1 s on another). A figure
divided by the yardstick measured beside it can be compared across days; a raw figure cannot. The work imitates an
interpreter-bound program (loops, dicts, strings, sorting), not numeric code, and runs in a fresh interpreter, so
the caller's imports and heap do not weigh on it. Standard library only: ``bench/suite_cpu.py`` runs before any
virtualenv exists.
"""

from __future__ import annotations

import statistics
import subprocess
import sys

# About 1 s of CPU on a 2026 x86-64 core with CPython 3.11; each repetition is one fresh interpreter.
WORK = """
import time
started = time.process_time()
table = {}
for i in range(1_500_000):
    key = f"k{i % 5003}"
    table[key] = table.get(key, 0) + i
rows = sorted(((v % 977, k) for k, v in table.items()), reverse=True)
words = " ".join(k for _, k in rows).split()
total = sum(len(w) for w in words) + sum(range(3_000_000))
print(time.process_time() - started)
"""
REPETITIONS = 3


def yardstick_seconds(repetitions: int = REPETITIONS, python: str = sys.executable) -> float:
    """The median CPU-seconds of ``WORK`` over ``repetitions`` fresh interpreters."""
    times = [float(subprocess.run([python, "-c", WORK], capture_output=True, text=True, check=True).stdout)
             for _ in range(repetitions)]
    return round(statistics.median(times), 3)


if __name__ == "__main__":
    print(yardstick_seconds())
