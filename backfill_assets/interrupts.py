"""Ctrl-C (SIGINT) stops a console script with one line and exit status 130 (128 + SIGINT, what a shell reports
for a command it interrupted), never a traceback.

The interrupt is raised where the command happens to be (an import, a database call, the demo's wait) as
``Interrupted``, which is not a ``KeyboardInterrupt``, so no ``except KeyboardInterrupt`` on the way swallows it
(click's turns one into "Aborted!", exit 1); ``finally`` blocks still run (the demo stops its daemon). Python drops
an exception raised inside a garbage-collection callback or a ``__del__`` (a SQLAlchemy weakref callback, seen under
load: the demo then ran to its end); such a dropped interrupt is delivered again, never printed. A library that
catches the interrupt, logs it with its traceback and raises it on (SQLAlchemy's pool) has that record dropped: the
one line is the whole story.

Code that installs its own SIGINT handler keeps its own way of stopping: ``dagster-daemon run`` (under
``backfill-assets-daemon``) shuts its threads down, says so, and exits 0 as Dagster's daemon does. An earlier design
told that stop from a SIGTERM by the interpreter's wake-up pipe, to exit 130 there too; under a loaded test suite a
daemon stopped by Ctrl-C once exited 0 that way (the pipe had not reported the signal; the cause was not found), and
a stop's exit status must be deterministic.
"""

from __future__ import annotations

import _thread
import logging
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

EXIT_INTERRUPTED = 128 + signal.SIGINT
# How soon an interrupt Python dropped (raised inside a garbage-collection callback) is delivered again.
RERAISE_DELAY_S = 0.05


class Interrupted(BaseException):
    """SIGINT, raised where the command was (a BaseException: nothing that catches Exception keeps going)."""


class RunInterrupted(BaseException):
    """Ctrl-C in a step of an in-process run, raised past Dagster's retry of interrupted steps (a BaseException that
    is not an interrupt Dagster knows: it fails the step)."""


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted()


class _NotTheInterrupt(logging.Filter):
    """Drops a log record whose exception is the interrupt on its way out: a library that catches it, logs it with
    its traceback and raises it on (SQLAlchemy's pool, returning a connection it was interrupted in: "Exception
    during reset or similar") would otherwise print a traceback before the command's one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (Interrupted, KeyboardInterrupt))


@contextmanager
def _interrupt_not_logged() -> Iterator[None]:
    """``_NotTheInterrupt`` on the handlers a library's record reaches with logging left unconfigured (Python's
    last resort) or configured at the root."""
    handlers = [h for h in (logging.lastResort, *logging.getLogger().handlers) if h is not None]
    quiet = _NotTheInterrupt()
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)


def _reraise_soon(done: threading.Event) -> None:
    """An interrupt raised inside a garbage-collection callback or a ``__del__`` is dropped by Python (only reported,
    as unraisable); interrupt the main thread again from outside that callback (through whichever SIGINT handler is
    in place: ours, or Dagster's daemon's), unless the command ended meanwhile."""

    def again() -> None:
        time.sleep(RERAISE_DELAY_S)
        if not done.is_set():
            _thread.interrupt_main(signal.SIGINT)  # runs the SIGINT handler in the main thread: Interrupted again

    threading.Thread(target=again, name="ctrl-c-again", daemon=True).start()


@contextmanager
def stopped_by_ctrl_c(command: str) -> Iterator[None]:
    """Run a console script's body: on SIGINT, print ``<command>: interrupted (Ctrl-C), stopped`` on stderr and
    exit 130."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Not the main thread (only it may set handlers), or started to ignore Ctrl-C (a background job of a
        # script, ``nohup``): left as it is.
        yield
        return
    done, dropped = threading.Event(), threading.Event()
    previous_hook = sys.unraisablehook

    def unraisable(report) -> None:
        # Ours, or the KeyboardInterrupt of a handler code installed (Dagster's daemon): dropped where it was raised.
        if isinstance(report.exc_value, (Interrupted, KeyboardInterrupt)):
            dropped.set()
            _reraise_soon(done)  # not printed: the interrupt is delivered again, where it can be raised
            return
        previous_hook(report)

    previous = signal.signal(signal.SIGINT, _raise_interrupted)
    sys.unraisablehook = unraisable
    interrupted = False
    try:
        with _interrupt_not_logged():
            yield
    except (Interrupted, KeyboardInterrupt):  # ours, or Python's own before our handler was in place
        interrupted = True
    finally:
        done.set()
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGINT, previous)
    # An interrupt dropped and not delivered again before the command ended (a loaded machine): still Ctrl-C.
    interrupted = interrupted or dropped.is_set()
    if interrupted:
        print(f"{command}: interrupted (Ctrl-C), stopped", file=sys.stderr, flush=True)
        sys.exit(EXIT_INTERRUPTED)


@contextmanager
def sigterm_kept() -> Iterator[None]:
    """Keep SIGTERM able to stop the process through the body: Dagster gives SIGTERM SIGINT's handler each time it
    puts its own back after an in-process run, so that a pod's SIGTERM stops a run as Ctrl-C would. A process
    started with SIGINT ignored (a script's background job: ``backfill-assets demo &``) then ignored SIGTERM too,
    and ``kill`` no longer stopped it: there SIGTERM's handler is put back as it was. Otherwise Dagster's mapping is
    kept (a console script's SIGTERM then stops it as Ctrl-C does, its ``finally`` blocks run)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread sets handlers (Dagster's too)
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before not in (None, signal.SIG_IGN) and signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
            signal.signal(signal.SIGTERM, before)


def interrupt_again() -> NoReturn:
    """Raise an interrupt that code on the way caught and did not raise on: Dagster ends an in-process run that
    Ctrl-C (or SIGTERM, which it maps to Ctrl-C's handler while it runs) interrupted as a failed run and returns, so
    a loop of runs went on to its next run. Raised through the SIGINT handler in place (a console script's: one line,
    exit 130), else as ``KeyboardInterrupt``."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, None)
    raise KeyboardInterrupt
