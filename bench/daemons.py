"""Which daemon each Dagster contender runs, and the command line recorded with its results.

Ours (O, B, the depends-on-past measurements, the Celery stack) run ``backfill-assets-daemon run``: Dagster's own
daemon whose sensor, backfill and run-queue loops are woken by new work and whose warm run workers start with it.
Naive Dagster (N) keeps stock ``dagster-daemon run``: Dagster's loops on their timers (sensors 5 s, backfills 30 s).
"""

from __future__ import annotations

from pathlib import Path

from backfill_assets.cli.daemon import dagster_bin

OURS_DAEMON = "backfill-assets-daemon"
STOCK_DAEMON = "dagster-daemon"


def daemon_argv(module: str, stock: bool = False) -> list[str]:
    """``<daemon> run -m module``: stock ``dagster-daemon`` for naive Dagster, ours otherwise."""
    return [dagster_bin(STOCK_DAEMON if stock else OURS_DAEMON), "run", "-m", module]


def command_text(argv: list[str]) -> str:
    """The command as a user types it (program name without the virtualenv's path), for the results."""
    return " ".join([Path(argv[0]).name, *argv[1:]])
