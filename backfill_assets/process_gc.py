"""Garbage collection for the product's own processes (the CLI, the daemon, the warm run worker and its runs), and
for the one process the product runs in without starting it: Dagster's code server, which evaluates its sensors.

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

Dagster's code server (``dagster api grpc``, started by any daemon or webserver, the product's or Dagster's own) is
not the product's to start, so its objects are frozen when the driver sensor is first evaluated there
(``freeze_once``): by then Dagster and the code location are loaded. A driver tick of a ten-year request reads and
copies its 10,950 cells; with the process's objects left in the collector's reach, each full collection those
allocations set off walked them all again: ``python -m bench.micro.driver_tick --days 3650 --done 1000 --location
ten-years`` gave a first tick 0.40 s of CPU and a settlement tick 0.41 s, against 0.24-0.26 s and 0.26-0.28 s with
the sensor freezing them (alternating with the code before, in-process).
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


_frozen_once = False


def freeze_once() -> None:
    """Collect, then ``gc.freeze()`` what this process holds, the first time it is called in the process (later calls
    do nothing): for a process the product does not start, once its long-lived objects exist. The collection first:
    garbage in a reference cycle that existed now would otherwise never be freed, and such garbage can hold a
    database connection in a transaction (see above). The thresholds are left as they are (the process owner's)."""
    global _frozen_once
    if _frozen_once:
        return
    _frozen_once = True
    gc.collect()
    gc.freeze()
