"""Ctrl-C (SIGINT) stops a console script with one line and exit status 130 (128 + SIGINT, what a shell reports
for a command it interrupted), never a traceback.

Two ways an interrupt reaches a command, and both end the same:

- it is raised where the command happens to be (an import, a database call, the demo's wait): the handler raises
  ``Interrupted``, which is not a ``KeyboardInterrupt``, so no ``except KeyboardInterrupt`` on the way swallows it
  (click's turns one into "Aborted!", exit 1); ``finally`` blocks still run (the demo stops its daemon);
- code that installs its own handler takes it (``dagster-daemon run`` turns SIGINT, and SIGTERM, into a clean
  return, exit 0): the signal's number is still written to a wake-up pipe (``signal.set_wakeup_fd``) by the
  interpreter whatever handler runs, so afterwards the command knows it was SIGINT, not SIGTERM, that stopped it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_INTERRUPTED = 128 + signal.SIGINT


class Interrupted(BaseException):
    """SIGINT, raised where the command was (a BaseException: nothing that catches Exception keeps going)."""


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted()


class _SignalLog:
    """The numbers of the signals this process received, read from the interpreter's wake-up pipe."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        os.set_blocking(self.write_end, False)  # the interpreter refuses a blocking wake-up fd
        self.previous = signal.set_wakeup_fd(self.write_end)

    def saw(self, signum: int) -> bool:
        try:
            received = os.read(self.read_end, 4096)
        except BlockingIOError:
            return False
        return bytes([signum]) in received

    def close(self) -> None:
        signal.set_wakeup_fd(self.previous)
        os.close(self.read_end)
        os.close(self.write_end)


@contextmanager
def stopped_by_ctrl_c(command: str) -> Iterator[None]:
    """Run a console script's body: on SIGINT, print ``<command>: interrupted (Ctrl-C), stopped`` on stderr and
    exit 130."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Not the main thread (only it may set handlers), or started to ignore Ctrl-C (a background job of a
        # script, ``nohup``): left as it is.
        yield
        return
    log = _SignalLog()
    previous = signal.signal(signal.SIGINT, _raise_interrupted)
    interrupted = False
    try:
        yield
    except Interrupted:
        interrupted = True
    except SystemExit as exc:
        # A command that chose a failing status keeps it (the daemon whose lease was taken over sends itself SIGINT
        # to stop Dagster's loops, then exits 1); a clean stop after a SIGINT is still the interrupt.
        interrupted = exc.code in (0, None) and log.saw(signal.SIGINT)
        if not interrupted:
            raise
    except KeyboardInterrupt:
        # Code with its own handler raised Python's own interrupt: still SIGINT.
        interrupted = log.saw(signal.SIGINT)
        if not interrupted:
            raise
    else:
        interrupted = log.saw(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)
        log.close()
    if interrupted:
        print(f"{command}: interrupted (Ctrl-C), stopped", file=sys.stderr, flush=True)
        sys.exit(EXIT_INTERRUPTED)
