"""The ``backfill-assets`` command line: a thin click layer over backfill_assets.engine."""

from . import data_commands, demo_command, ops_commands, override_commands, reconcile_command, request_commands  # noqa: E402,F401 - importing registers the commands
from .app import cli, main

__all__ = ["cli", "main"]
