"""Printing a rich table whole: ids, version ids and reasons are copied from it into the next command, so no
column is ever cut to fit the terminal. A table wider than the terminal is printed at its natural width (the
terminal wraps the long lines) instead of being squeezed with ellipses."""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

UNBOUNDED = 100_000  # characters: wider than any row a table of ours holds


def print_table(table: Table, console: Console | None = None) -> None:
    console = console or Console()
    unbounded = console.options.update(width=UNBOUNDED)
    natural = Measurement.get(console, unbounded, table).maximum
    if natural > console.width:
        console = Console(width=natural, file=console.file, force_terminal=console.is_terminal,
                          no_color=console.no_color)
    console.print(table, crop=False)
