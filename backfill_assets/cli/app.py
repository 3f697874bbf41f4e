"""The command group, the shared context (home, settings, catalog) and error handling."""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import click

from backfill_assets.engine.model.errors import BackfillError, FieldMessage, StorageError, bounded
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.settings import ENV_DAGSTER_HOME, Settings, home_folder
from backfill_assets.integration import instance_template

from .code_location import CodeLocation, load_code_location, resolve_module_name
from .json_text import json_text

if TYPE_CHECKING:
    from backfill_assets.service import Backfills

DEFAULT_HOME = ".dagster_home"


@dataclass
class AppContext:
    home: Path
    module: str | None = None
    _location: CodeLocation | None = None

    def code_location(self) -> CodeLocation:
        """The code location this command works on, imported on first use (Dagster with it)."""
        if self._location is None:
            self._location = load_code_location(resolve_module_name(self.module, Path.cwd()), Path.cwd())
        return self._location

    def graph(self) -> AssetGraph:
        return self.code_location().graph

    def settings(self) -> Settings:
        return Settings.from_env()

    def service(self) -> Backfills:
        """The service every command calls, as the CLI (requests it creates record source ``cli``). The run
        queue's limits are the instance's, as Dagster reads them from this home's dagster.yaml (the service's one
        source); the instance is opened only by an operation that needs it."""
        from backfill_assets.engine.model.request_model import RequestSource
        from backfill_assets.integration.location_resources import resources_opener
        from backfill_assets.integration.runs.direct_tick import DirectTick
        from backfill_assets.integration.selection import selector_of
        from backfill_assets.integration.service_wiring import backfills_for_home

        location = self.code_location()
        return backfills_for_home(location.graph, self.home, None, RequestSource.CLI, default_user(),
                                  selector_of(location.defs, location.graph), resources_opener(location.defs),
                                  DirectTick(location.module_name, str(Path.cwd())))


    def creating_service(self, conf_given: bool) -> Backfills:
        """``request create``'s service. While a ``backfill-assets-daemon`` watches this home, the code location's
        snapshot from its last load, if nothing it came from changed (integration/location_cache.py): no Dagster
        imported, the woken daemon's driver sensor queues the first runs. Otherwise (or with ``--conf``, which the
        code location's own config classes check) the loaded code location's, which ticks the driver itself."""
        from backfill_assets.integration.snapshot_service import create_service

        return self._on_snapshot(create_service, conf_given)

    def reading_service(self) -> Backfills:
        """The service of a command that reads the catalog and the graph's shape alone (``request show``, ``request
        list``): on the code location's snapshot while it still describes it (no Dagster imported), else loaded."""
        from backfill_assets.integration.snapshot_service import snapshot_service

        return self._on_snapshot(snapshot_service)

    def asking_service(self, conf_given: bool = False) -> Backfills:
        """The service of a command that asks Dagster's instance about runs and needs the graph's shape alone
        (``reconcile``, ``request create --dry-run``): on the code location's snapshot while it still describes it,
        with Dagster's instance opened from this home (the code location not imported), else loaded. ``--conf``
        is checked by the code location's own config classes: with it, loaded."""
        from backfill_assets.integration.snapshot_service import instance_service

        return self._on_snapshot(instance_service, conf_given)

    def _on_snapshot(self, make: Callable[[Path, str, Path, str], Backfills | None], conf_given: bool = False
                     ) -> Backfills:
        """The service ``make`` builds on the code location's snapshot, else (none valid, or ``--conf`` given) the
        loaded code location's."""
        if not conf_given:
            quick = make(self.home, resolve_module_name(self.module, Path.cwd()), Path.cwd(), default_user())
            if quick is not None:
                return quick
        return self.service()

    def remember_location(self, backfills: Backfills) -> None:
        """After a command that loaded the code location and read the run queue's limits: their snapshot, for the
        next ``request create``, ``request show``, ``request list``, ``reconcile`` or dry run."""
        if self._location is None:
            return  # the snapshot's own service: nothing new to remember
        from backfill_assets.integration.location_cache import remember

        remember(self.home, self._location.module_name, Path.cwd(), self._location.graph,
                 backfills.context.queue_limits())


def ensure_home(home: Path) -> Path:
    """Create the instance folder and give it the shipped dagster.yaml (embedded SQLite default) unless it has its
    own (which the daemon checks when it starts: ``instance_template.missing_blocks``)."""
    home = home_folder(str(home))  # refused before anything is made there
    home.mkdir(parents=True, exist_ok=True)
    instance_template.install(home)
    # Child processes (dagster-daemon, dagster dev, step workers) must see the same instance.
    os.environ[ENV_DAGSTER_HOME] = str(home)
    return home


def default_user() -> str:
    """Who is asking, when nobody said: the OS user."""
    from backfill_assets.service.context import os_user

    return os_user()


# The service names its input's fields as Python does; the CLI words them as the flags that set them (an argument
# as its usage line shows it: PARTITION, HANDOFF_ID).
FLAG_OF_FIELD = {
    "from_day": "--from", "to_day": "--to", "partition_key": "PARTITION", "older_than_days": "--older-than",
    "version_id": "--version", "to_version": "--to", "request_id": "request id", "handoff_id": "HANDOFF_ID",
}


def flag_of(field: str) -> str:
    return FLAG_OF_FIELD.get(field, "--" + field.replace("_", "-"))


# The longest error line the CLI prints: our messages quote a bounded prefix of any input (errors.quoted); this
# keeps one we did not word (a storage's own reason) to a line too. click's usage errors quote the whole value.
ERROR_LINE_LIMIT = 1000
USAGE_LINE_LIMIT = 300


def _fail(message: str, limit: int = ERROR_LINE_LIMIT) -> NoReturn:
    click.echo("error: " + bounded(" ".join(message.splitlines()), limit), err=True)  # one line, whatever the input
    sys.exit(2)


class BackfillGroup(click.Group):
    """Turns every ``BackfillError``, ``StorageError`` and click usage error into one line on stderr and exit
    status 2 — never a traceback, never a multi-line usage block."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            _usage_error(exc)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FieldMessage as exc:
            _fail(exc.worded(flag_of))
        except (BackfillError, StorageError) as exc:  # a storage outage is not the user's doing, but one line too
            _fail(str(exc))
        except click.UsageError as exc:
            _usage_error(exc)


def _usage_error(exc: click.UsageError) -> NoReturn:
    if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
        raise exc  # a bare group or command: show its help
    _fail(exc.format_message(), USAGE_LINE_LIMIT)


def emit(data: Any, as_json: bool, human: Any = None) -> None:
    if as_json:
        click.echo(json_text(data))
    elif callable(human):
        human()
    else:
        click.echo(human if human is not None else data)


json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


@click.group(cls=BackfillGroup)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Dagster instance folder (default: $DAGSTER_HOME, else ./{DEFAULT_HOME}).",
)
@click.option(
    "-m",
    "--module",
    envvar="BACKFILL_MODULE",
    default=None,
    help="Code location module built with backfill_definitions (default: pyproject.toml's [tool.dagster] "
    "module_name, else workspace.yaml).",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None, module: str | None) -> None:
    """Safe, auditable backfills on Dagster: write-audit-publish, frozen requests, reconciliation."""
    chosen = home or Path(os.environ.get(ENV_DAGSTER_HOME) or DEFAULT_HOME)
    # init writes a project (with its own home); it must not leave a stray home where it was run.
    ctx.obj = AppContext(home=chosen if ctx.invoked_subcommand == "init" else ensure_home(chosen), module=module)


def main() -> None:
    # Dagster flags partitioned check specs as "preview"; users of this CLI cannot act on that warning.
    warnings.filterwarnings("ignore", message=".*is currently in preview.*")
    warnings.filterwarnings("ignore", message=".*is currently in beta.*")
    cli(prog_name="backfill-assets")
