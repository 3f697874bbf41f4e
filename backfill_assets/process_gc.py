"""Garbage collection for the product's own processes (the CLI, the daemon, the warm run worker and its runs).

Importing Dagster and a code location builds more than 200,000 objects the collector tracks, which live as long as
the process. With CPython's default thresholds the collector walks them again and again: ``python -m
bench.micro.process_gc`` gives 1.65-1.68 s of CPU to import Dagster and the orders location with the defaults and
1.35-1.38 s with these settings (ratio 0.80-0.83); a one-day run forked from that process shows no difference
beyond the noise. The test suite's processes, set the same way, took a tenth less time.

Two standard remedies, both from the ``gc`` module's documentation:

- collect the youngest generation every ``YOUNG_GENERATION_THRESHOLD`` allocations instead of every 700, so the
  import and each run trigger about 70 times fewer young collections;
- once the long-lived objects exist, ``gc.freeze()`` them: later full collections skip them, and a process that
  forks (the warm worker) keeps their memory pages shared with its children instead of copying them when the
  collector touches their headers.

Cycles are still collected; they only wait a little longer. Nothing here runs at import: the console scripts and
the warm worker call these functions first thing.
"""

from __future__ import annotations

import gc

# Large enough that the import of Dagster and a code location triggers a few dozen young collections; small
# enough that garbage cycles (a few kB each) never add up to more than a few MB before one.
YOUNG_GENERATION_THRESHOLD = 50_000


def collect_less_often() -> None:
    """Raise the youngest generation's threshold; the older generations keep their defaults."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, middle, oldest)


def freeze_long_lived_objects() -> None:
    """Move every object tracked so far out of the collector's reach (call it after the imports, before forking)."""
    gc.freeze()
