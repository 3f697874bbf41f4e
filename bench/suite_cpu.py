"""Where a command's CPU goes, every process counted: ``python -m bench.suite_cpu [--out F] -- <command...>``.

``time`` counts only the processes a command waits for; the test suite's daemons, code servers and webservers run
in sessions of their own, so it shows about two thirds of what the machine really spends. This samples every
process's CPU time from ``/proc`` every half second while the command runs (a process that lives less than that
is counted by its parent only when waited for) and prints the CPU-seconds by kind of process and how many of each
were started, with the wall time: ``python -m bench.suite_cpu -- make test`` made the figures in docs/TESTING.md.
It reads ``/proc`` with the standard library only (not ``cpu_groups.py``'s psutil, which groups by session) so that
it also runs as ``python3 bench/suite_cpu.py -- .ci/run`` in a fresh clone, before the virtualenv exists.

The machine's speed is measured before and after the command and every five minutes while it runs
(``bench/yardstick.py``): ``cpu_in_yardsticks``, the CPU-seconds divided by their mean, compares runs made on days
when the machine ran at different speeds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

try:  # ``python -m bench.suite_cpu`` or ``python3 bench/suite_cpu.py`` (a fresh clone, no package on the path)
    from bench.yardstick import yardstick_seconds
except ImportError:
    from yardstick import yardstick_seconds  # type: ignore[no-redef]

SAMPLE_SECONDS = 0.5
TOP_COMMANDS = 30  # the command labels that took the most CPU, whatever their kind
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# (kind, a fragment of its command line), first match wins: the tools before the interpreters that run them.
KINDS = (
    ("compute-log tail", "tail -F"),
    ("compute-log watcher", "watch_orphans"),
    ("chromium", "chrom"),
    ("webserver", "dagster-webserver"),
    ("code server", "api grpc"),
    ("code server", "code-server"),
    ("daemon", "backfill-assets-daemon"),
    ("daemon", "dagster-daemon"),
    ("warm worker and its forked runs", "warm_worker"),
    ("dagster job launch", "job launch"),
    ("celery worker", "celery"),
    ("S3 server", "moto"),
    ("postgresql", "postgres"),
    ("rabbitmq", "beam.smp"),
    ("pytest-xdist worker", "-u -c"),
    ("pytest", "pytest"),
    ("multiprocessing child", "-B -c"),
)


def kind_of(command: str) -> str:
    for kind, fragment in KINDS:
        if fragment in command:
            return kind
    return "python, other" if "python" in command else "other"


def _cpu_seconds(pid: str) -> tuple[str, float] | None:
    """(start time, CPU-seconds) of a process, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[19], (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _command(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def label_of(command: str, words: int = 3) -> str:
    """A command line's first words, each path shortened to its last part: ``python -m pytest``,
    ``backfill-assets request show``. The interpreter's options and paths say nothing about what ran."""
    parts = [part.rsplit("/", 1)[-1] for part in command.split()]
    if parts and parts[0].startswith("python"):
        parts = [part for part in parts[1:] if part not in ("-u", "-B", "-E", "-I", "-s")]
    return " ".join(parts[:words])[:80]


def _entry(pid: str, counted: float) -> list:
    """What ``sample`` keeps of a process: [kind, CPU-seconds counted so far, label]."""
    command = _command(pid)
    return [kind_of(command), counted, label_of(command)]


def sample(stop: threading.Event, ready: threading.Event) -> tuple[Counter, Counter, Counter]:
    """CPU-seconds and processes started by kind, and CPU-seconds by command label, from when ``ready`` is set (the
    processes already running then count from the CPU time they had) until ``stop`` is set."""
    seen: dict[tuple[str, str], list] = {}  # (pid, start time) -> [kind, CPU-seconds counted, label]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        now = _cpu_seconds(pid)
        if now is not None:
            seen[(pid, now[0])] = _entry(pid, now[1])
    ready.set()
    cpu, started, by_label = Counter(), Counter(), Counter()
    while not stop.wait(SAMPLE_SECONDS):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            now = _cpu_seconds(pid)
            if now is None:
                continue
            key = (pid, now[0])
            if key not in seen:
                seen[key] = _entry(pid, 0.0)
                started[seen[key][0]] += 1
            kind, counted, label = seen[key]
            cpu[kind] += now[1] - counted
            by_label[label] += now[1] - counted
            seen[key][1] = now[1]
    return cpu, started, by_label


def _time_during(stop: threading.Event, every: float, into: list[float]) -> None:
    """One interpreter's yardstick every ``every`` seconds until ``stop`` (its CPU is counted with the command's:
    about 1 CPU-second in 300)."""
    while every > 0 and not stop.wait(every):
        into.append(yardstick_seconds(1))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the figures to this JSON file")
    parser.add_argument("--yardstick-repetitions", type=int, default=3,
                        help="fresh interpreters timed before and after the command (the median of each counts)")
    parser.add_argument("--yardstick-every", type=float, default=300.0,
                        help="seconds between timings of one interpreter while the command runs (0: none); the "
                             "ends of a long run do not see its middle")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    yardstick_before = yardstick_seconds(args.yardstick_repetitions)
    stop, ready, result = threading.Event(), threading.Event(), {}
    sampler = threading.Thread(
        target=lambda: result.update(zip(("cpu", "started", "by_label"), sample(stop, ready), strict=True))
    )
    during: list[float] = []
    timer = threading.Thread(target=_time_during, args=(stop, args.yardstick_every, during), daemon=True)
    sampler.start()
    ready.wait()
    timer.start()
    started_at = time.monotonic()
    status = subprocess.call(command)
    wall = time.monotonic() - started_at
    stop.set()
    sampler.join()
    total = sum(result["cpu"].values())
    timer.join()
    after = yardstick_seconds(args.yardstick_repetitions)
    yardstick = {"before_s": yardstick_before, "during_s": during, "after_s": after,
                 "mean_s": round(statistics.mean([yardstick_before, *during, after]), 3)}
    figures = {"command": command, "exit_status": status, "wall_s": round(wall, 1), "cpu_s": round(total, 1),
               "cores_busy": round(total / wall / os.cpu_count(), 3), "yardstick": yardstick,
               "cpu_in_yardsticks": round(total / yardstick["mean_s"]),
               "by_kind": {k: {"cpu_s": round(v, 1), "started": result["started"][k]}
                           for k, v in result["cpu"].most_common()},
               "top_commands": {k: round(v, 1) for k, v in result["by_label"].most_common(TOP_COMMANDS) if v >= 0.05}}
    print(json.dumps(figures, indent=1))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
