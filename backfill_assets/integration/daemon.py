"""``backfill-assets-daemon run …``: ``dagster-daemon run …`` whose loops start when work arrives, not on a timer.

Every option, daemon and heartbeat is Dagster's own (``backfill-assets-daemon run -m my_module`` is
``dagster-daemon run -m my_module``); the sensor, backfill and run queue loops wait on a ``Waker``
(``integration/runs/waker.py``), and each code location's warm run worker starts with the daemon. A deployment
that keeps ``dagster-daemon run`` keeps every promise, at Dagster's pace (sensors every 5 s, backfills every
30 s).

One daemon per instance: the daemon holds a lease in the catalog while it runs (``integration/runs/instance_lease.py``);
a second one, or one started beside a running ``dagster-daemon run``, refuses to start naming the first.

Its workspace is reloaded (a new code server per location) when a location's code files changed, checked every
minute, and otherwise every ``--reload-seconds``; Dagster's reloads every minute whatever happened
(``integration/runs/dagster_adapter/workspace_reload.py``).

Example: backfill-assets-daemon run -m my_project.definitions
         backfill-assets-daemon --backstop-seconds 60 run -w workspace.yaml
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from backfill_assets.engine.store.daemon_lease import DEFAULT_LEASE_SECONDS, MIN_LEASE_SECONDS
from backfill_assets.integration.runs.instance_lease import LEASE_SECONDS_ENV
from backfill_assets.integration.runs.waker import DEFAULT_POLL_SECONDS

# Dagster's daemon starts new code servers every 60 s; this one when the code changed, or after this long.
DEFAULT_RELOAD_SECONDS = 600.0

if TYPE_CHECKING:
    from backfill_assets.integration.runs.instance_lease import InstanceLease


@click.group(help="dagster-daemon run, its sensor, backfill and run-queue loops woken by new work instead of "
                  "waiting 5 s / 30 s (docs/PERFORMANCE.md, 'The daemon').\n\nExample: backfill-assets-daemon run -m "
                  "my_project.definitions")
@click.option("--backstop-seconds", type=click.FloatRange(min=1.0), default=None,
              help="Seconds between the sensor and backfill passes nothing woke (default: Dagster's, 5 and 30).")
@click.option("--poll-seconds", type=click.FloatRange(min=0.01, max=5.0), default=DEFAULT_POLL_SECONDS,
              show_default=True, help="How often new work is looked for.")
@click.option("--lease-seconds", type=click.FloatRange(min=MIN_LEASE_SECONDS), default=DEFAULT_LEASE_SECONDS,
              show_default=True, envvar=LEASE_SECONDS_ENV,
              help="How long the instance's daemon lease lasts unrenewed: after a crash on another host, a new "
                   "daemon may start this long after the last renewal (on the same host, at once).")
@click.option("--reload-seconds", type=click.FloatRange(min=60.0), default=DEFAULT_RELOAD_SECONDS, show_default=True,
              help="Seconds between reloads of the workspace (new code servers) while no code file changed. A "
                   "changed file is still picked up within a minute, as by dagster-daemon, which reloads every 60 s.")
@click.pass_context
def main(ctx: click.Context, backstop_seconds: float | None, poll_seconds: float, lease_seconds: float,
         reload_seconds: float) -> None:
    ctx.obj = {"backstop_seconds": backstop_seconds, "poll_seconds": poll_seconds, "lease_seconds": lease_seconds,
               "reload_seconds": reload_seconds}


@main.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []},
    add_help_option=False,
)
@click.pass_context
def run(ctx: click.Context) -> None:
    """Run the instance's daemons (the arguments of dagster-daemon run, --help included)."""
    from backfill_assets.integration.runs.dagster_adapter import run_dagster_daemon, woken_daemons
    from backfill_assets.integration.runs.waker import Waker
    from backfill_assets.process_gc import freeze_long_lived_objects

    freeze_long_lived_objects()
    options = ctx.obj
    wants_help = "--help" in ctx.args or "-h" in ctx.args
    lease = None if wants_help else _take_lease(options["lease_seconds"])

    def make_daemons(instance):
        _warn_of_missing_blocks(Path(instance.root_directory))
        waker = Waker(
            instance, Path(instance.root_directory),
            poll_seconds=options["poll_seconds"], backstop_seconds=options["backstop_seconds"],
        ).start()
        return woken_daemons(instance, waker)

    try:
        # Dagster's command ends with SystemExit, even at 0
        run_dagster_daemon(make_daemons, list(ctx.args), reload_seconds=options["reload_seconds"])
    finally:
        if lease is not None:
            lease.release()
            if lease.lost:  # stopped because another daemon took over: not a clean stop
                click.echo(lease.lost, err=True)
                sys.exit(1)


def _take_lease(lease_seconds: float) -> InstanceLease:
    """The instance's daemon lease, taken before Dagster starts anything; a refusal is one line and exit 1."""
    import dagster as dg

    from backfill_assets.engine.model.errors import BackfillError
    from backfill_assets.engine.model.settings import Settings
    from backfill_assets.engine.store.catalog import Catalog
    from backfill_assets.integration.runs.instance_lease import DaemonRefused, take_instance_lease

    try:
        catalog = Catalog.of_settings(Settings.from_env())
        with dg.DagsterInstance.get() as instance:
            return take_instance_lease(instance, catalog, lease_seconds)
    except DaemonRefused as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except BackfillError as exc:  # no DAGSTER_HOME, a catalog at another schema version or empty: one line
        click.echo(f"backfill-assets-daemon: {exc}", err=True)
        sys.exit(1)


def _warn_of_missing_blocks(home: Path) -> None:
    """A home with its own dagster.yaml is never rewritten; what a promise needs that it lacks is named once, when
    the daemon starts, and otherwise, in one informational line, the library's optional classes it does not use
    (Dagster's own launcher, coordinator and storages, or any other, keep every promise)."""
    from backfill_assets.integration import instance_template

    config = home / instance_template.INSTANCE_YAML
    missing = instance_template.missing_blocks(home)
    if missing:
        click.echo(
            f"backfill-assets-daemon: warning: {config}: " + "; ".join(missing)
            + f". Add them from {instance_template.template_path()} (the run queue's limits and run monitoring "
            "are what production's free slot, the team limits and re-running a dead run's cells rest on).",
            err=True,
        )
        return
    note = instance_template.accelerator_note(home)
    if note:
        click.echo(f"backfill-assets-daemon: note: {config}: {note}", err=True)


if __name__ == "__main__":
    main()
