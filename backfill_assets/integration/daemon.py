"""``backfill-assets-daemon run …``: ``dagster-daemon run …`` whose loops start when work arrives, not on a timer.

Every option, daemon and heartbeat is Dagster's own (``backfill-assets-daemon run -m my_module`` is
``dagster-daemon run -m my_module``); the sensor, backfill and run queue loops wait on a ``Waker``
(``integration/runs/waker.py``), and each code location's warm run worker starts with the daemon. A deployment
that keeps ``dagster-daemon run`` keeps every promise, at Dagster's pace (sensors every 5 s, backfills every
30 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

USAGE = "usage: backfill-assets-daemon run [the options of dagster-daemon run, e.g. -m MODULE or -w workspace.yaml]"


def _woken_daemons(instance):
    from backfill_assets.integration.runs.dagster_adapter import woken_daemons
    from backfill_assets.integration.runs.waker import Waker

    waker = Waker(instance, Path(instance.root_directory)).start()
    return woken_daemons(instance, waker)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "run":
        click.echo(USAGE, err=True)
        sys.exit(2)
    from backfill_assets.integration.runs.dagster_adapter import run_dagster_daemon

    run_dagster_daemon(_woken_daemons, args[1:])


if __name__ == "__main__":
    main()
