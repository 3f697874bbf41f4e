"""The one multiprocessing context the tests start racing and killed children from: Python's forkserver, which has
imported what every such child needs once, so each child forks from it instead of starting an interpreter that
imports SQLAlchemy, the engine and Dagster again (a spawned racer cost about 0.5 s of CPU before its first query).

A process has one forkserver, and its preload list counts only before it starts: every user asks for it here, with
the modules of all of them. The server keeps the environment of the moment it started, so a child is handed what
it needs (URLs, paths, its whole environment) as arguments, never read from the test's environment."""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import ForkServerContext

PRELOADED = (
    "tests.engine.catalog_helpers",
    "tests.integration.serial_days_children",
    "tests.tables.iceberg_helpers",
    "tests.tables.pg_table_helpers",
    "tests.reliability.children",
    "tests.reliability.table_children",
)


def forkserver_context() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOADED))
    return context


def stop_forkserver() -> None:
    """Stop this process's forkserver if it runs (Python offers no public call; the next use starts a new one)."""
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()
