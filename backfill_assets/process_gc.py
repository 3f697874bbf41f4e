"""Garbage collection for the product's own processes (the CLI, the daemon, the warm run worker and its runs).

Importing Dagster and a code location builds more than 200,000 objects the collector tracks, which live as long as
the process. With CPython's default thresholds the collector walks them again and again: ``python -m
bench.micro.process_gc`` gives 1.65-1.68 s of CPU to import Dagster and the orders location with the defaults and
1.35-1.38 s with these settings (ratio 0.80-0.83); a one-day run forked from that process shows no difference
beyond the noise.

Two standard remedies, both from the ``gc`` module's documentation, used only around start-up:

- while the process imports, collect the youngest generation every ``YOUNG_GENERATION_THRESHOLD`` allocations
  instead of every 700, so the import triggers about 70 times fewer young collections;
- once the long-lived objects exist, ``gc.freeze()`` them: later full collections skip them, and a process that
  forks (the warm worker) keeps their memory pages shared with its children instead of copying them when the
  collector touches their headers. Then CPython's default thresholds come back.

Why the defaults come back: garbage in a reference cycle is freed only by the collector, and such garbage can hold
a database connection in the middle of a transaction (a suspended generator, an exception's traceback). With a
young threshold of 50,000 for the whole life of every process, one full test run had a SQLite catalog's write lock
held for minutes (two tests timed out on it), in five runs that did not; such garbage is the likely holder. Import
time holds no transaction, so the higher threshold stays there.
Nothing here runs at import: the console scripts and the warm worker call these functions first thing.
"""

from __future__ import annotations

import gc

# Large enough that the import of Dagster and a code location triggers a few dozen young collections.
YOUNG_GENERATION_THRESHOLD = 50_000
DEFAULT_YOUNG_GENERATION_THRESHOLD = 700  # CPython's own


def collect_less_often() -> None:
    """Raise the youngest generation's threshold for the imports; ``freeze_long_lived_objects`` restores it."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, oldest)


def freeze_long_lived_objects() -> None:
    """Move every object tracked so far out of the collector's reach (call it after the imports, before forking),
    then collect at CPython's default pace again."""
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(DEFAULT_YOUNG_GENERATION_THRESHOLD, middle, oldest)
