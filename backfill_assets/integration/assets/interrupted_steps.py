"""Ctrl-C in a step of a run a command runs in its own process: the step stops, never retried.

Dagster turns an interrupt inside a step whose asset has a retry policy into a retry request ("respect retry policy
when interrupts occur"): right for a step a cluster evicts, whose retry runs elsewhere, but a command that runs its
runs in-process (the demo's production days, ``run_partitions``, ``run_chunk``) then ran the step again in the
process Ctrl-C was meant to stop, and went on to its next run. Such runs carry ``backfill/on_interrupt=stop``: an
interrupt in their steps is raised again as ``RunInterrupted``, which Dagster's retry boundary lets through (it
fails the step), and the command, seeing it in the run's events, stops as Ctrl-C does (``runs/local_runs.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from backfill_assets.engine.model import tags as T
from backfill_assets.interrupts import RunInterrupted


def _is_interrupt(exc: BaseException) -> bool:
    """KeyboardInterrupt, Dagster's interrupt of a step, a console script's Ctrl-C: what is neither an error, a
    generator's close nor an exit."""
    return not isinstance(exc, (Exception, GeneratorExit, SystemExit))


def stopping_on_interrupt(context: Any, events: Iterator[Any]) -> Iterator[Any]:
    """The step's events; in a run tagged to stop on interrupt, an interrupt becomes ``RunInterrupted``."""
    try:
        yield from events
    except BaseException as exc:
        if _is_interrupt(exc) and context.run.tags.get(T.ON_INTERRUPT) == T.ON_INTERRUPT_STOP:
            raise RunInterrupted(f"interrupted in run {context.run.run_id}") from exc
        raise
