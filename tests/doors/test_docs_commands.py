"""Every ``backfill-assets`` command the docs show exists, with the options it is shown with.

README.md, CONTRIBUTING.md and docs/*.md are read for command lines: in fenced shell blocks (``bash``, ``sh``,
``shell``, ``console`` and untagged ones) every line that runs ``backfill-assets`` (a ``$`` prompt, ``VAR=value``
prefixes and a ``.venv/bin/`` path allowed; ``\\`` continuations joined; ``#`` comments dropped), and every inline
code span that starts with ``backfill-assets`` or with one of its commands and shows an option
(``reconcile --repair``). Each is checked against click's own command tree
(``backfill_assets.cli.cli``), in-process, so a renamed command or flag fails here:

- the subcommand path exists (``request create``, ``tables sync``; a synopsis ``request list | show ID`` is each
  alternative under the same group);
- every long option (``--foo``, ``--foo=x``) is one of that command's (or, before the subcommand, the group's);
- a value given to an option with choices is one of them (a ``click.Choice``, or the ``a | b | c`` its help
  lists; ``--format csv|json`` shows several);
- no more positional words than the command takes (placeholders such as ``ID``, ``ASSET``, ``DAY``, ``<run id>``
  and ``req-…`` count as one word each; ``…`` on its own stands for "and the rest", so checking stops there);
- in a synopsis (a fenced line with ``[...]``): an option outside brackets and parentheses is one click requires,
  one inside brackets is not, and no required option is left out; in a fenced example (no brackets) no required
  option is left out. Inline spans are often fragments (``backfill-assets request create --dry-run``), so only
  the first four checks apply to them.

``dagster`` and ``dg`` command lines (fenced or inline) are checked the same way against Dagster's own click trees
(its ``create_dagster_cli()`` and ``dagster_dg_cli``'s, read and never invoked), and a sensor or job one names
(``sensor start NAME``, ``-j NAME``) must be one of the orders code location's, the one ``workspace.yaml`` loads.
docs/CLI_REFERENCE.md is left out: it is rendered from ``--help`` and tests/doors/test_cli_reference.py
keeps it so, but every command of ours must be shown somewhere else too. Every repository path the docs name
(``tests/engine/test_states.py``, ``engine/wap/gate.Gate``: a module and a name it defines) exists, but for the
files a reader is told to write in a project of their own.
"""

from __future__ import annotations

import pytest

from backfill_assets.cli import cli
from tests.doors.named_paths import named_paths, path_exists
from tests.doors.shown_commands import (
    DOCS,
    PROGRAM,
    Shown,
    command_alternatives,
    fenced_lines,
    is_placeholder,
    leaf_paths,
    marked_words,
    named_definitions,
    problems,
    program_call,
    shown_commands,
    shown_dagster_commands,
    shown_path,
    split_words,
)

# ---- the tests -------------------------------------------------------------------------------------------------

SHOWN = shown_commands()


def test_the_docs_show_commands_to_check():
    """The reader finds the docs' commands: a change to the docs' shape cannot silently empty this test."""
    assert len(SHOWN) > 100
    assert {s.where.split(":")[0] for s in SHOWN} >= {"README.md", "docs/CLI.md", "docs/REQUESTS.md"}


@pytest.mark.parametrize("path", DOCS)
def test_every_command_a_doc_shows_exists_with_its_options(path):
    found = [p for shown in SHOWN if shown.where.startswith(path + ":") for p in problems(shown)]
    assert found == [], "\n".join(found)


def test_every_command_of_ours_is_shown_in_the_docs():
    """A new command is documented beside the others, not only in the generated reference."""
    shown = {shown_path(marked_words(alternative), cli)
             for s in SHOWN for alternative in command_alternatives(split_words(s.text)[1:], cli)}
    commands = set(leaf_paths(cli, ()))
    assert len(commands) >= 25
    assert sorted(" ".join(c) for c in commands - shown) == []


DAGSTER_SHOWN = shown_dagster_commands()


def test_every_dagster_and_dg_command_the_docs_show_exists_with_its_options():
    """Dagster's ``dagster`` and ``dg`` commands, checked as ours are, against their own click trees."""
    assert {s.program for s in DAGSTER_SHOWN} == {"dagster", "dg"}
    found = [p for shown in DAGSTER_SHOWN for p in problems(shown)]
    assert found == [], "\n".join(found)


def test_every_dagster_command_names_a_sensor_or_job_of_the_code_location():
    from backfill_assets.examples.orders.definitions import defs

    repository = defs.get_repository_def()
    sensors = {s.name for s in repository.sensor_defs}
    jobs = {j.name for j in repository.get_all_jobs()}
    named, found = 0, []
    for shown in DAGSTER_SHOWN:
        for kind, name in named_definitions(split_words(shown.text)):
            named += 1
            if name not in (sensors if kind == "sensor" else jobs) and not is_placeholder(name):
                found.append(f"{shown.where}: {shown.text}: no {kind} {name} in the orders code location")
    assert named >= 3
    assert found == [], "\n".join(found)


# ---- the files and names the docs point to ---------------------------------------------------------------------

def test_every_path_a_doc_names_exists():
    named = named_paths()
    assert len(named) > 100
    missing = [f"{where}: {path}" for where, path in named if not path_exists(path)]
    assert missing == [], "\n".join(missing)


# ---- the checker itself ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "text, expected",
    [
        ("backfill-assets request create --assets a --from 2022-10-01 --to 2022-10-02", []),
        ("backfill-assets request creat --assets a", ["has no subcommand creat"]),
        ("backfill-assets rollback daily_revenue 2022-10-17 --reasons x", ["has no option --reasons",
                                                                            "requires --reason"]),
        ("backfill-assets gc --older-than DAYS [--dry-run]", ["--older-than is optional, shown required"]),
        ("backfill-assets rollback ASSET PARTITION [--reason TEXT]", ["requires --reason, shown optional"]),
        ("backfill-assets read ASSET PARTITION [--format csv|parquet]", ["shown with parquet"]),
        ("backfill-assets request create --assets a --from D --to D --reprocess all", ["shown with all"]),
        ("backfill-assets versions ASSET PARTITION EXTRA", ["takes 2 argument(s), shown with 3"]),
        ("backfill-assets request list [--status S] | show ID | cancel ID [--timeout S]",
         ["`backfill-assets request cancel` has no option --timeout"]),
        ("backfill-assets accept daily_revenue/2022-10-17/<run id>/1 --approved-by ana --reason 'a # b'", []),
        ("backfill-assets skip ASSET (PARTITION | --from D --to D) --reason TEXT [--by NAME]", []),
        ("backfill-assets -m MODULE …", []),
        ("backfill-assets request wait req-… > wait.log 2>&1 &", []),
        ("dagster asset materialize -m M --selekt raw_orders", ["has no option --selekt", "requires --select"]),
        ("dg launch --assets a,b --partition 2024-04-02", []),
        ("dg lunch --assets a", ["`dg` has no subcommand lunch"]),
    ],
)
def test_the_checker_flags_what_the_code_contradicts(text, expected):
    found = problems(Shown("doc.md:1", text, fenced=True))
    assert len(found) == len(expected), found
    for problem, words in zip(found, expected, strict=True):
        assert words in problem


def test_the_reader_joins_continuations_and_drops_comments():
    markdown = (
        "```bash\n"
        "DAGSTER_HOME=$PWD/h .venv/bin/backfill-assets request create --assets a \\\n"
        "  --from D --to D   # a comment with --no-such-flag\n"
        "echo '#not a comment'\n"
        "```\n"
        "```python\nbackfill-assets nothing here\n```\n"
    )
    lines = list(fenced_lines(markdown))
    assert [number for number, _ in lines] == [2, 4]
    call = program_call(lines[0][1], PROGRAM)
    assert call is not None and call.split() == "backfill-assets request create --assets a --from D --to D".split()
    assert lines[1][1] == "echo '#not a comment'"


def test_the_path_check_resolves_modules_and_their_names():
    assert path_exists("engine/wap/gate.Gate") and path_exists("backfill_assets/engine/store/catalog.Catalog.publish")
    assert path_exists("tests/engine/test_catalog*.py") and path_exists("docs/ARCHITECTURE.md")
    assert not path_exists("engine/wap/gate.NoSuchName") and not path_exists("engine/store/no_such_module.py")
