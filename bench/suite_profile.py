"""Where a whole suite's CPU goes by function, every process sampled: ``python -m bench.suite_profile RAW [--kind K]
[--top N]``.

``bench/suite_cpu.py`` says which kinds of process take the CPU; this says what they do with it. Record the command
with py-spy following every child process, in its raw (folded) format, at a rate it can keep up with across a few
dozen processes, for example::

    py-spy record -r 25 --subprocesses -f raw -o suite.folded -- python -m pytest -q -n 3 --dist loadgroup ...

Each line of that file is one stack (``process <pid>:"<command>";frame;frame;...``, outermost first) and its
sample count. A stack whose innermost frame waits (a lock, a condition, a selector, a sleep, a thread pool's idle
worker, a child being waited for) is left out: py-spy samples such threads too, and they spend no CPU. What is left
is attributed to the kind of its innermost process (``suite_cpu.kind_of``: a code server, a daemon, an xdist
worker, ...), and every function on the stack is counted once (inclusive shares). The shares are of samples, not
seconds: py-spy falls behind on a loaded machine and skips samples evenly, so shares hold where absolute times would
not.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

try:  # ``python -m bench.suite_profile`` or ``python3 bench/suite_profile.py``
    from bench.suite_cpu import kind_of
except ImportError:
    from suite_cpu import kind_of  # type: ignore[no-redef]

# Innermost frames of a thread that waits rather than computes (py-spy's own idle detection misses most of them).
WAITING = ("Condition.wait", "Event.wait", "Lock.acquire", "Thread._wait_for_tstate_lock", "_worker (concurrent/",
           "select (selectors", "Selector.select", "_serve (grpc/", "_blocking (grpc/", "wait_for_grpc_server",
           "Popen._wait", "Popen2IO.read", "check_daemon_loop", "sleep")
PROCESS = re.compile(r'process \d+:"([^"]*)"')
FRAME = re.compile(r"^(.*?) \((.*?)(?::\d+)?\)$")


@dataclass
class Profile:
    """Samples by kind of process, and each function's inclusive samples (overall, and per kind)."""

    total: int = 0
    idle: int = 0
    by_kind: Counter = field(default_factory=Counter)
    functions: Counter = field(default_factory=Counter)
    functions_by_kind: dict[str, Counter] = field(default_factory=dict)


def _waits(frame: str) -> bool:
    return any(word in frame for word in WAITING)


def add_stack(profile: Profile, stack: str, count: int) -> None:
    frames = stack.split(";")  # a process's command line may hold ";" too: its frames then match no FRAME
    if _waits(frames[-1]):
        profile.idle += count
        return
    processes = PROCESS.findall(stack)
    kind = kind_of(processes[-1]) if processes else "other"
    profile.total += count
    profile.by_kind[kind] += count
    per_kind = profile.functions_by_kind.setdefault(kind, Counter())
    for name in {f"{m.group(1)} ({m.group(2)})" for f in frames if (m := FRAME.match(f))}:
        profile.functions[name] += count
        per_kind[name] += count


def read(path: Path) -> Profile:
    profile = Profile()
    with path.open(errors="replace") as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if count.isdigit() and stack:
                add_stack(profile, stack, int(count))
    return profile


def report(profile: Profile, kind: str | None, top: int) -> str:
    out = [f"samples computing: {profile.total} (waiting, left out: {profile.idle})", "by kind of process:"]
    out += [f"  {100 * n / profile.total:5.1f} %  {k}" for k, n in profile.by_kind.most_common()]
    functions = profile.functions_by_kind.get(kind, Counter()) if kind else profile.functions
    base = profile.by_kind[kind] if kind else profile.total
    out.append(f"functions, inclusive, in {kind or 'every process'} ({base} samples):")
    out += [f"  {100 * n / base:5.1f} %  {name}" for name, n in functions.most_common(top)]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", type=Path, help="py-spy's raw output (-f raw), recorded with --subprocesses")
    parser.add_argument("--kind", help="the functions of one kind of process only (as listed by kind)")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args(argv)
    print(report(read(args.raw), args.kind, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
