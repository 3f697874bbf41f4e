"""A long table laid out from a one-row template prints exactly what rich prints when it lays out every row: same
bytes to a pipe and to a colour terminal, wide characters, text that looks like markup, a title that wraps, a table
wider than the terminal."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from backfill_assets.cli import table_output
from backfill_assets.cli.table_output import PLACEHOLDER, TEMPLATE_ROWS, print_table

COLUMNS = ("partition", "asset", "decision", "reason", "run")
TITLE = "dry run: 10950 cell(s), order forward, max_active 2, at most 2 run(s) at once"


def _printed(laid_out: bool, columns, rows, title, width: int, terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, color_system="truecolor" if terminal else None)
    if laid_out:
        table_output._print_laid_out(columns, rows, title, console)
    else:
        table_output._print_by_template(columns, rows, title, console)
    return out.getvalue()


def _cells(day: int) -> tuple[str, ...]:
    reasons = ["", "[bold]not markup[/bold]", "upstream 🚫 skipped"]
    return (f"2016-01-{day % 28 + 1:02d}", ["raw_orders", "order_facts", "日次売上"][day % 3],
            ["published", "rejected", "skipped"][day % 3], reasons[day % 3], f"run-{day:04d}" if day % 4 else "")


@pytest.mark.parametrize("terminal", [False, True])
@pytest.mark.parametrize("width", [40, 80, 300])
@pytest.mark.parametrize("title", [None, TITLE])
def test_a_long_table_prints_as_rich_lays_it_out(terminal: bool, width: int, title: str | None):
    rows = [_cells(day) for day in range(TEMPLATE_ROWS + 50)]
    assert _printed(False, COLUMNS, rows, title, width, terminal) == _printed(True, COLUMNS, rows, title, width,
                                                                             terminal)


TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Co")), max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.lists(st.text(st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=8),
             min_size=n, max_size=n),
    st.lists(st.lists(TEXT, min_size=n, max_size=n), min_size=1, max_size=6),
    st.none() | TEXT,
    st.integers(10, 120),
    st.booleans(),
)))
def test_any_table_prints_as_rich_lays_it_out(drawn):
    columns, rows, title, width, terminal = drawn
    assert _printed(False, columns, rows, title, width, terminal) == _printed(True, columns, rows, title, width,
                                                                             terminal)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=6), min_size=2, max_size=2), st.booleans())
def test_a_long_table_of_any_text_prints_as_rich_lays_it_out(odd_cells, terminal):
    """Control characters (a tab rich expands, a newline) included: such a table is laid out by rich."""
    rows = [_cells(day) for day in range(TEMPLATE_ROWS + 1)] + [("x", "y", *odd_cells, "")]
    printed = []
    for print_it in (print_table, table_output._print_laid_out):
        out = io.StringIO()
        console = Console(file=out, width=80, force_terminal=terminal, color_system="truecolor" if terminal else None)
        print_it(COLUMNS, rows, None, console)
        printed.append(out.getvalue())
    assert printed[0] == printed[1]


def test_a_short_table_and_one_holding_the_placeholder_are_laid_out_by_rich(monkeypatch):
    templated = []
    monkeypatch.setattr(table_output, "_print_by_template", lambda *args: templated.append(args))
    print_table(COLUMNS, [_cells(day) for day in range(TEMPLATE_ROWS)], console=Console(file=io.StringIO()))
    odd = [_cells(day) for day in range(TEMPLATE_ROWS + 1)] + [("x", "y", PLACEHOLDER, "", "")]
    print_table(COLUMNS, odd, console=Console(file=io.StringIO()))
    assert templated == []
    print_table(COLUMNS, [_cells(day) for day in range(TEMPLATE_ROWS + 1)], console=Console(file=io.StringIO()))
    assert len(templated) == 1
