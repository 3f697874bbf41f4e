"""The ``backfill-assets`` command line: a thin click layer over the service (``backfill_assets.service``): it
parses, calls ``Backfills`` and renders the records it gets back."""

from . import (  # noqa: F401 - importing registers the commands
    catalog_commands,
    clear_command,
    data_commands,
    demo_command,
    init_command,
    ops_commands,
    override_commands,
    pause_commands,
    reconcile_command,
    request_commands,
    tables_command,
    trace_command,
)
from .app import cli, main

__all__ = ["cli", "main"]
