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
docs/CLI_REFERENCE.md is left out: it is rendered from ``--help`` and tests/integration/test_cli_reference.py
keeps it so, but every command of ours must be shown somewhere else too. Every repository path the docs name
(``tests/engine/test_states.py``, ``engine/wap/gate.Gate``: a module and a name it defines) exists, but for the
files a reader is told to write in a project of their own.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from backfill_assets.cli import cli

ROOT = Path(__file__).resolve().parents[2]
GENERATED = {"docs/CLI_REFERENCE.md"}
DOCS = sorted(
    str(p.relative_to(ROOT))
    for p in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")]
    if str(p.relative_to(ROOT)) not in GENERATED
)
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}
FENCE = re.compile(r"^\s*```(\S*)\s*$")
INLINE = re.compile(r"`(backfill-assets [^`]+)`")
SUBCOMMAND_SPAN = re.compile(r"`([a-z][a-z-]* [^`]*--[^`]*)`")
DAGSTER_SPAN = re.compile(r"`((?:dagster|dg) [^`]+)`")
PROGRAM = "backfill-assets"
# What may stand before the program on a line: a prompt, environment assignments, a path to the virtualenv's bin.
LEAD = re.compile(r"^(?:\$\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S+\s+)*(?:\S*/)?")
ANGLE = re.compile(r"<[^<>]*>")  # <run id>, <host:pid from the step's log>: one placeholder word
ELIDED = {"…", "...", "…]"}
SHELL_OPERATORS = {"&", "&&", ";", "||"}  # the command ends there (a background job, a second command)


@dataclass(frozen=True)
class Shown:
    """One command line as a doc shows it."""

    where: str  # path:line
    text: str  # from the program's name on, comments and continuations resolved
    fenced: bool

    @property
    def program(self) -> str:
        return self.text.split(maxsplit=1)[0]

    @property
    def synopsis(self) -> bool:
        return self.fenced and "[" in self.text


# ---- reading the docs ------------------------------------------------------------------------------------------

def _fenced_lines(path: str) -> Iterator[tuple[int, str]]:
    return fenced_lines((ROOT / path).read_text(encoding="utf-8"))


def fenced_lines(markdown: str) -> Iterator[tuple[int, str]]:
    """(line number, logical line) of every shell-like fenced block, continuations joined (a ``\\`` at the end, or
    a synopsis's next line starting with ``|``), comments dropped."""
    lines: list[tuple[int, str]] = []
    for number, line, indented in _physical_lines(markdown):
        if not line:
            continue
        if lines and (line.startswith("| ") or indented and line.startswith(("[", "(", "-"))):
            lines[-1] = (lines[-1][0], f"{lines[-1][1]} {line}")
        else:
            lines.append((number, line))
    yield from lines


def _physical_lines(markdown: str) -> Iterator[tuple[int, str, bool]]:
    language: str | None = None
    pending: list[str] = []
    start = 0
    for number, line in enumerate(markdown.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            language = None if language is not None else fence.group(1).lower()
            continue
        if language is None or language not in SHELL_LANGUAGES:
            continue
        code = _without_comment(line).rstrip()
        if not pending:
            start = number
        if code.endswith("\\"):
            pending.append(code[:-1])
            continue
        logical = " ".join([*pending, code])
        yield start, logical.strip(), logical[:1].isspace()
        pending = []


def _without_comment(line: str) -> str:
    """The line up to an unquoted ``#`` that starts a word (``#`` inside a word, quotes or a ``<placeholder>``
    stays)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "<" and ">" in line[i:]:
            quote = ">"
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _program_call(line: str, program: str) -> str | None:
    """The line from ``program`` on, when the line runs it."""
    lead = LEAD.match(line)
    rest = line[lead.end():] if lead else line
    if rest == program or rest.startswith(program + " "):
        return rest
    return None


def shown_commands() -> list[Shown]:
    shown = []
    for path in DOCS:
        for number, line in _fenced_lines(path):
            call = _program_call(line, PROGRAM)
            if call:
                shown.append(Shown(f"{path}:{number}", call, fenced=True))
        for number, line in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(), 1):
            for span in INLINE.findall(line):
                shown.append(Shown(f"{path}:{number}", span.replace("\\|", "|"), fenced=False))
            # `request create --wait`, `reconcile --repair`: a command of ours named without the program
            for span in SUBCOMMAND_SPAN.findall(line):
                if span.split()[0] in cli.commands:
                    shown.append(Shown(f"{path}:{number}", f"{PROGRAM} {span.replace(chr(92) + '|', '|')}",
                                       fenced=False))
    return shown


def shown_dagster_commands() -> list[Shown]:
    """Every ``dagster`` or ``dg`` command line, fenced or an inline code span."""
    found = []
    for path in DOCS:
        lines = [(number, line, True) for number, line in _fenced_lines(path)]
        for number, line in enumerate((ROOT / path).read_text(encoding="utf-8").splitlines(), 1):
            lines += [(number, span, False) for span in DAGSTER_SPAN.findall(line)]
        for number, line, fenced in lines:
            for program in ("dagster", "dg"):
                call = _program_call(line, program)
                if call:
                    found.append(Shown(f"{path}:{number}", call, fenced))
    return found


# ---- words, brackets and alternatives --------------------------------------------------------------------------

def _words(text: str) -> list[str]:
    text = ANGLE.sub("PLACEHOLDER", text)
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote in prose: words as they are
        return text.split()


@dataclass(frozen=True)
class Word:
    text: str
    optional: bool  # inside [...]
    grouped: bool  # inside (...): one of alternatives


def _marked(words: list[str]) -> list[Word]:
    """Words with brackets stripped, each marked with whether it was inside ``[...]`` or ``(...)`` (``A[,A]``
    keeps its own pair)."""
    marked, square, round_ = [], 0, 0
    for raw in words:
        body = raw.lstrip("[(")
        lead = raw[: len(raw) - len(body)]
        square += lead.count("[")
        round_ += lead.count("(")
        text = raw.strip("[]()")
        if text and text != "|":
            marked.append(Word(text, square > 0, round_ > 0))
        square = max(square + body.count("[") - body.count("]"), 0)
        round_ = max(round_ + body.count("(") - body.count(")"), 0)
    return marked


def _alternatives(words: list[str], root: click.Command) -> list[list[str]]:
    """A synopsis ``request list [--status S] | show ID | cancel ID`` as its alternatives: the first keeps the
    words before the last group name it reaches; each later one is that prefix plus its own words. A ``|`` inside
    brackets or parentheses belongs to them."""
    parts: list[list[str]] = [[]]
    depth = 0
    for word in words:
        if word == "|" and depth == 0:
            parts.append([])
            continue
        depth += word.count("[") + word.count("(") - word.count("]") - word.count(")")
        parts[-1].append(word)
    if len(parts) == 1:
        return parts
    prefix = _group_prefix(parts[0], root)
    return [parts[0], *([*prefix, *part] for part in parts[1:])]


def _group_prefix(words: list[str], root: click.Command) -> list[str]:
    """The words of ``words`` up to (and with) the deepest group they name: ``['request']`` for ``request list``."""
    command: click.Command = root
    prefix: list[str] = []
    taken: list[str] = []
    for word in words:
        text = word.strip("[]()")
        if _subcommand(command, text) is not None:
            prefix = list(taken)
            command = _subcommand(command, text)
            if isinstance(command, click.Group):
                prefix = [*taken, word]
        taken.append(word)
    return prefix


# ---- checking one command line ---------------------------------------------------------------------------------

def _subcommand(command: click.Command, name: str) -> click.Command | None:
    """A group's subcommand by name, through click's API (dg's groups list theirs lazily)."""
    if not isinstance(command, click.Group):
        return None
    return command.get_command(click.Context(command), name)


def _options(command: click.Command) -> dict[str, click.Option]:
    names = {}
    for param in command.params:
        if isinstance(param, click.Option):
            for name in [*param.opts, *param.secondary_opts]:
                names[name] = param
    return names


def _takes_value(option: click.Option) -> bool:
    return not option.is_flag and not option.count


def _is_placeholder(text: str) -> bool:
    return text.isupper() or "PLACEHOLDER" in text or text in ELIDED or text.endswith("…")


def root_command(program: str) -> click.Command:
    """The click command a program's name runs: ours, or Dagster's own ``dagster`` and ``dg``."""
    if program == PROGRAM:
        return cli
    if program == "dagster":
        from dagster._cli import create_dagster_cli  # Dagster's CLI tree, read and never invoked

        return create_dagster_cli()
    from dagster_dg_cli.cli import create_dg_cli

    return create_dg_cli()


def problems(shown: Shown) -> list[str]:
    root = root_command(shown.program)
    found = []
    words = _words(shown.text)[1:]
    ends = [i for i, w in enumerate(words) if w in SHELL_OPERATORS or w.startswith((">", "2>"))]
    for alternative in _alternatives(words[: ends[0]] if ends else words, root):
        found += _problems_of(shown, _marked(alternative), root)
    return [f"{shown.where}: `{shown.text}`: {p}" for p in found]


def _problems_of(shown: Shown, words: list[Word], root: click.Command) -> list[str]:
    command: click.Command = root
    path: list[str] = [shown.program]
    used: dict[str, Word] = {}
    positionals = 0
    found: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        text = word.text
        if text in ELIDED:
            return found  # "and the rest": nothing after it is a claim about the command
        if text.startswith("-") and text != "-":
            name, _, inline_value = text.partition("=")
            option = _options(command).get(name)
            if option is None:
                if name != "--help":
                    found.append(f"`{' '.join(path)}` has no option {name}")
                # Its value, if it looks like one, goes with it: one wrong name is one problem.
                i += 2 if not inline_value and i + 1 < len(words) and not words[i + 1].text.startswith("-") else 1
                continue
            used[option.name] = word
            if _takes_value(option) and not inline_value and i + 1 < len(words):
                i += 1
                inline_value = words[i].text
            found += _choice_problems(path, name, option, inline_value)
            i += 1
            continue
        sub = _subcommand(command, text)
        if sub is not None:
            found += _required_problems(shown, path, command, used)
            command, path, used, positionals = sub, [*path, text], {}, 0
            i += 1
            continue
        if isinstance(command, click.Group) and not _is_placeholder(text):
            found.append(f"`{' '.join(path)}` has no subcommand {text}")
            return found
        positionals += 1
        i += 1
    taken = sum(
        (10**6 if p.nargs == -1 else p.nargs) for p in command.params if isinstance(p, click.Argument)
    )
    if positionals > taken:
        found.append(f"`{' '.join(path)}` takes {taken} argument(s), shown with {positionals}")
    found += _required_problems(shown, path, command, used)
    return found


HELP_CHOICES = re.compile(r"\b([a-z_]+(?: \| [a-z_]+)+)\b")  # "none | failed | completed" in an option's help


def _choices(option: click.Option) -> list[str] | None:
    """The values an option takes: a ``click.Choice``'s, or the ``a | b | c`` its help lists (the service checks
    those words; the help is what ``--help`` promises)."""
    if isinstance(option.type, click.Choice):
        return [str(c) for c in option.type.choices]
    listed = HELP_CHOICES.search(option.help or "")
    return listed.group(1).split(" | ") if listed else None


def _choice_problems(path: list[str], name: str, option: click.Option, value: str | None) -> list[str]:
    choices = _choices(option)
    if not value or choices is None or _is_placeholder(value):
        return []
    wrong = [v for v in value.split("|") if v and v not in choices and not _is_placeholder(v)]
    return [f"`{' '.join(path)} {name}` takes one of {choices}, shown with {v}" for v in wrong]


def _required_problems(shown: Shown, path: list[str], command: click.Command, used: dict[str, Word]) -> list[str]:
    if not shown.fenced:
        return []
    found = []
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        word = used.get(param.name)
        flag = max(param.opts, key=len)
        if param.required and word is None and not any(w.grouped for w in used.values()):
            found.append(f"`{' '.join(path)}` requires {flag}, not shown")
        elif shown.synopsis and word is not None and param.required and word.optional:
            found.append(f"`{' '.join(path)}` requires {flag}, shown optional ([{flag} …])")
        elif shown.synopsis and word is not None and not param.required and not word.optional and not word.grouped:
            found.append(f"`{' '.join(path)}`'s {flag} is optional, shown required (write [{flag} …])")
    return found


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


def _leaf_paths(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Every command a user can run: a leaf, or a group that runs on its own (``tables``)."""
    if not isinstance(command, click.Group) or command.invoke_without_command:
        yield path
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            yield from _leaf_paths(_subcommand(command, name), (*path, name))  # type: ignore[arg-type]


def _shown_path(words: list[Word], root: click.Command) -> tuple[str, ...]:
    command, path = root, []
    for word in words:
        sub = _subcommand(command, word.text)
        if sub is not None:
            command, path = sub, [*path, word.text]
    return tuple(path)


def test_every_command_of_ours_is_shown_in_the_docs():
    """A new command is documented beside the others, not only in the generated reference."""
    shown = {_shown_path(_marked(alternative), cli)
             for s in SHOWN for alternative in _alternatives(_words(s.text)[1:], cli)}
    commands = set(_leaf_paths(cli, ()))
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
        for kind, name in _named_definitions(_words(shown.text)):
            named += 1
            if name not in (sensors if kind == "sensor" else jobs) and not _is_placeholder(name):
                found.append(f"{shown.where}: {shown.text}: no {kind} {name} in the orders code location")
    assert named >= 3
    assert found == [], "\n".join(found)


def _named_definitions(words: list[str]) -> Iterator[tuple[str, str]]:
    for i, word in enumerate(words[:-1]):
        if word == "sensor" and words[i + 1] in ("start", "stop", "preview", "cursor") and i + 2 < len(words):
            yield "sensor", words[i + 2]
        elif word in ("-j", "--job"):
            yield "job", words[i + 1]


# ---- the files and names the docs point to ---------------------------------------------------------------------

PATH = re.compile(
    r"(?<![\w/.-])((?:backfill_assets|tests|bench|deploy|scripts|docs|engine|integration|service|cli|lineage|scaffold"
    r"|examples)/[\w./*+-]*[\w*])"
)
SAVE_AS = re.compile(r"<!-- save-as: (\S+) -->")
_DEFINITION = r"^\s*(?:def|class|async def)\s+{name}\b|^\s*{name}\s*[:=]"


def named_paths() -> list[tuple[str, str]]:
    """(path:line, the path) of every repository path a doc names (``engine/...`` is under backfill_assets/)."""
    found = []
    for path in DOCS:
        text = (ROOT / path).read_text(encoding="utf-8")
        users_files = set(SAVE_AS.findall(text))  # files the reader writes in a project of their own
        for number, line in enumerate(text.splitlines(), 1):
            found += [(f"{path}:{number}", p.rstrip(".")) for p in PATH.findall(line) if p not in users_files]
    return found


def _exists(named: str) -> bool:
    for base in (ROOT, ROOT / "backfill_assets"):
        if any(ch in named for ch in "*<") and list(base.glob(named)):
            return True
        if (base / named).exists() or (base / f"{named}.py").exists():
            return True
        # engine/store/catalog.Catalog.publish: a module and a name defined in it
        module, _, names = named.partition(".")
        source = base / f"{module}.py"
        if names and source.exists():
            defined = source.read_text(encoding="utf-8")
            if all(re.search(_DEFINITION.format(name=re.escape(n)), defined, re.M) for n in names.split(".")):
                return True
    return False


def test_every_path_a_doc_names_exists():
    named = named_paths()
    assert len(named) > 100
    missing = [f"{where}: {path}" for where, path in named if not _exists(path)]
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
    call = _program_call(lines[0][1], PROGRAM)
    assert call is not None and call.split() == "backfill-assets request create --assets a --from D --to D".split()
    assert lines[1][1] == "echo '#not a comment'"


def test_the_path_check_resolves_modules_and_their_names():
    assert _exists("engine/wap/gate.Gate") and _exists("backfill_assets/engine/store/catalog.Catalog.publish")
    assert _exists("tests/engine/test_catalog*.py") and _exists("docs/ARCHITECTURE.md")
    assert not _exists("engine/wap/gate.NoSuchName") and not _exists("engine/store/no_such_module.py")
