"""What a contender costs while it works: wall time, CPU seconds and peak memory of every process involved.

A sampler thread polls, every ``interval`` seconds, the processes of the contender: the roots it started, their
descendants, anything still in one of their sessions (a worker that re-parented itself; never the benchmark's own
session), and optionally the PostgreSQL backends serving one database (Airflow's metadata DB, so its queries are
not free). CPU is the sum
over those processes of user+system time used inside the measured window (a process alive at the start counts
only what it used after it). A process that lives and dies between two samples is missed, and the last
``interval`` of a process that exits is lost: with run processes of seconds this under-counts by a few percent.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

import psutil

SAMPLE_SECONDS = 0.2
# A root started without a session of its own (the floor loop, a CLI command) shares the benchmark's: following that
# session would count the benchmark's own process, first seen inside the window, with all its CPU since it started.
OWN_SESSION = os.getsid(0)


@dataclass
class Usage:
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mb: float = 0.0  # the largest sum of RSS over the contender's processes at one moment
    peak_process_rss_mb: float = 0.0  # the largest single process (e.g. one run worker)
    processes: int = 0  # distinct processes seen
    # CPU by kind of process (``bench.suite_cpu``'s kinds, the product's CLI apart): what a figure is made of.
    cpu_by_kind: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in asdict(self).items()}


@dataclass
class _Seen:
    baseline: float  # CPU already used when the window opened (0 for a process born inside it)
    last: float
    name: str = ""
    kind: str = ""


@dataclass
class ProcessSampler:
    roots: list[int] = field(default_factory=list)
    pg_database: str | None = None
    interval: float = SAMPLE_SECONDS

    def __post_init__(self) -> None:
        self._seen: dict[tuple[int, float], _Seen] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._peak_sum = 0
        self._peak_one = 0
        self._started = 0.0
        self._opening = True

    def add_root(self, pid: int) -> None:
        self.roots.append(pid)

    def __enter__(self) -> "ProcessSampler":
        self._started = time.monotonic()
        self._sample()  # the baseline of everything already running
        self._opening = False
        self._thread = threading.Thread(target=self._loop, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._sample()
        self.usage = Usage(
            wall_s=time.monotonic() - self._started,
            cpu_s=sum(s.last - s.baseline for s in self._seen.values()),
            peak_rss_mb=self._peak_sum / 2**20,
            peak_process_rss_mb=self._peak_one / 2**20,
            processes=len(self._seen),
            cpu_by_kind=_by_kind(self._seen.values()),
        )

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _tracked(self) -> list[psutil.Process]:
        procs: dict[int, psutil.Process] = {}
        sessions = set()
        for pid in self.roots:
            try:
                root = psutil.Process(pid)
                if os.getsid(pid) != OWN_SESSION:
                    sessions.add(os.getsid(pid))
                procs[pid] = root
                for child in root.children(recursive=True):
                    procs[child.pid] = child
            except (psutil.Error, ProcessLookupError):
                continue
        for proc in psutil.process_iter(["pid", "cmdline"]):
            if proc.pid in procs:
                continue
            try:
                if sessions and os.getsid(proc.pid) in sessions:
                    procs[proc.pid] = proc
                elif self.pg_database and _is_backend_of(proc.info.get("cmdline") or [], self.pg_database):
                    procs[proc.pid] = proc
            except (ProcessLookupError, PermissionError):
                continue
        return list(procs.values())

    def _sample(self) -> None:
        total_rss = 0
        for proc in self._tracked():
            try:
                with proc.oneshot():
                    times = proc.cpu_times()
                    rss = proc.memory_info().rss
                    key = (proc.pid, proc.create_time())
                    name = proc.name()
                    command = " ".join(proc.cmdline()) if (proc.pid, proc.create_time()) not in self._seen else ""
            except psutil.Error:
                continue
            used = times.user + times.system
            seen = self._seen.get(key)
            if seen is None:
                self._seen[key] = _Seen(baseline=used if self._opening else 0.0, last=used, name=name,
                                        kind=kind_of_process(command))
            else:
                seen.last = used
            total_rss += rss
            self._peak_one = max(self._peak_one, rss)
        self._peak_sum = max(self._peak_sum, total_rss)


def kind_of_process(command: str) -> str:
    """``bench.suite_cpu``'s kind of a command line, with the product's CLI (``backfill-assets request create``) as
    a kind of its own: a request's figure counts the command that made it."""
    from bench.suite_cpu import kind_of

    if "backfill-assets " in f"{command} " and "backfill-assets-daemon" not in command:
        return "backfill-assets CLI"
    return kind_of(command)


def _by_kind(seen: Iterable[_Seen]) -> dict[str, float]:
    totals: dict[str, float] = {}
    for process in seen:
        totals[process.kind] = totals.get(process.kind, 0.0) + process.last - process.baseline
    return {kind: round(cpu, 3) for kind, cpu in sorted(totals.items(), key=lambda item: -item[1])}


def _is_backend_of(cmdline: list[str], database: str) -> bool:
    # A PostgreSQL backend retitles itself "postgres: <user> <database> <client> <activity>".
    title = " ".join(cmdline)
    return title.startswith("postgres:") and f" {database} " in f"{title} "
