"""Printing a table whole: ids, version ids and reasons are copied from it into the next command, so no column is
ever cut to fit the terminal. A table wider than the terminal is printed at its natural width (the terminal wraps
the long lines) instead of being squeezed with ellipses.

Cells are text, printed as written (never read as rich markup: a reason may hold brackets). A long table (a
ten-year request's 10,950 cells) is laid out by rich once, on a table of one row whose columns have the long
table's widths; every row is then that row's line with its own cells in place. Rich lays out each cell of each row
twice (measured, then rendered): ~1 ms a row, 13.8 s for ``request show`` at ten years."""

from __future__ import annotations

import re
from typing import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

UNBOUNDED = 100_000  # characters: wider than any row a table of ours holds
# Beyond this many rows, rows are laid out by the one-row template: below it rich is quick enough either way.
TEMPLATE_ROWS = 100
# Stands for a cell's characters in the template row: a private-use character no cell of ours holds.
PLACEHOLDER = "\ue000"
# A cell holding one of these is laid out by rich: a control character (a newline, a tab rich expands) has no
# width of its own to pad by, and the placeholder would be taken for the template's.
LAID_OUT_BY_RICH = re.compile("[\x00-\x1f\x7f" + PLACEHOLDER + "]")


def print_table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None,
                console: Console | None = None) -> None:
    """``rows`` under ``columns``' headers, with ``title`` above, as rich prints such a table."""
    console = console or Console()
    if len(rows) > TEMPLATE_ROWS and not any(LAID_OUT_BY_RICH.search(cell) for row in rows for cell in row):
        _print_by_template(columns, rows, title, console)
    else:
        _print_laid_out(columns, rows, title, console)


def _print_laid_out(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
                    console: Console) -> None:
    table = _table(columns, title)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    _print_whole(table, console)


def _table(columns: Sequence[str], title: str | None, widths: Sequence[int] | None = None) -> Table:
    table = Table(title=title)
    for index, name in enumerate(columns):
        table.add_column(name, width=widths[index] if widths else None)
    return table


def _print_whole(table: Table, console: Console) -> None:
    _wide_enough(table, console).print(table, crop=False)


def _wide_enough(table: Table, console: Console) -> Console:
    """``console``, or one as wide as ``table`` when the terminal is narrower, writing to the same file."""
    unbounded = console.options.update(width=UNBOUNDED)
    natural = Measurement.get(console, unbounded, table).maximum
    if natural <= console.width:
        return console
    return Console(width=natural, file=console.file, force_terminal=console.is_terminal, no_color=console.no_color)


def _print_by_template(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
                       console: Console) -> None:
    """Rich's layout of a one-row table with the long table's column widths (title, borders, header, styles as
    rich prints them), its row's line repeated with each row's cells."""
    widths = [max([cell_len(name), *(cell_len(row[index]) for row in rows)]) for index, name in enumerate(columns)]
    template = _table(columns, title, widths)
    template.add_row(*(Text(PLACEHOLDER * width) for width in widths))
    wide = _wide_enough(template, console)
    with wide.capture() as captured:
        wide.print(template, crop=False)
    lines = captured.get().split("\n")
    [at] = [index for index, line in enumerate(lines) if PLACEHOLDER in line]
    # The row's line split around its cells: the left edge, the separators between cells, the right edge.
    around = [part for part in lines[at].split(PLACEHOLDER) if part]
    if len(around) != len(columns) + 1:  # not the row's line as expected: rich lays every row out
        _print_laid_out(columns, rows, title, console)
        return
    body = []
    for row in rows:
        parts = [around[0]]
        for cell, width, after in zip(row, widths, around[1:], strict=True):
            parts += [cell, " " * (width - cell_len(cell)), after]
        body.append("".join(parts))
    console.file.write("\n".join([*lines[:at], *body, *lines[at + 1:]]))
    console.file.flush()
