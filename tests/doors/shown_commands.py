"""Reading the command lines and repository paths out of the docs, and checking each against the code: the
machinery of ``test_docs_commands.py``, whose docstring says what is checked and how."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

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


def program_call(line: str, program: str) -> str | None:
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
            call = program_call(line, PROGRAM)
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
                call = program_call(line, program)
                if call:
                    found.append(Shown(f"{path}:{number}", call, fenced))
    return found


# ---- words, brackets and alternatives --------------------------------------------------------------------------

def split_words(text: str) -> list[str]:
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


def marked_words(words: list[str]) -> list[Word]:
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


def command_alternatives(words: list[str], root: click.Command) -> list[list[str]]:
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


def is_placeholder(text: str) -> bool:
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
    words = split_words(shown.text)[1:]
    ends = [i for i, w in enumerate(words) if w in SHELL_OPERATORS or w.startswith((">", "2>"))]
    for alternative in command_alternatives(words[: ends[0]] if ends else words, root):
        found += _problems_of(shown, marked_words(alternative), root)
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
        if isinstance(command, click.Group) and not is_placeholder(text):
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
    if not value or choices is None or is_placeholder(value):
        return []
    wrong = [v for v in value.split("|") if v and v not in choices and not is_placeholder(v)]
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



def leaf_paths(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """Every command a user can run: a leaf, or a group that runs on its own (``tables``)."""
    if not isinstance(command, click.Group) or command.invoke_without_command:
        yield path
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            yield from leaf_paths(_subcommand(command, name), (*path, name))  # type: ignore[arg-type]


def shown_path(words: list[Word], root: click.Command) -> tuple[str, ...]:
    command, path = root, []
    for word in words:
        sub = _subcommand(command, word.text)
        if sub is not None:
            command, path = sub, [*path, word.text]
    return tuple(path)


def named_definitions(words: list[str]) -> Iterator[tuple[str, str]]:
    for i, word in enumerate(words[:-1]):
        if word == "sensor" and words[i + 1] in ("start", "stop", "preview", "cursor") and i + 2 < len(words):
            yield "sensor", words[i + 2]
        elif word in ("-j", "--job"):
            yield "job", words[i + 1]
