"""CPU seconds per part of a stack while a measurement runs, and what the machine did besides.

Two kinds of part:

- **sessions**: a process we started in its own session (a Celery worker, dagster-daemon with its run processes,
  moto_server) and everything in that session, sampled every ``interval`` seconds as ``bench/measure.py`` does
  (user+system time used inside the window; the last ``interval`` of a process that exits is lost). Their
  processes live for seconds to minutes, so sampling misses little.
- **servers**: a long-lived process shared with other users (the PostgreSQL postmaster, the RabbitMQ broker),
  read only at the start and the end of the window. A PostgreSQL backend may live a few milliseconds (Dagster's
  storage opens a connection per call), far too short to sample; but once the postmaster has reaped it, its CPU
  is in the postmaster's children times. So a server's CPU is its own, plus its reaped children's, plus what its
  children still alive at the end used since the start, minus what the children that died in the window had
  already used before it (their whole lifetime is in the children times).

The machine's busy time over the window (all CPUs, ``psutil.cpu_times``: everything but idle and iowait) is
measured too: busy minus every part is what nothing of ours used (another user's work, the kernel's).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import psutil

SAMPLE_SECONDS = 0.2


def _cpu(times) -> float:
    return times.user + times.system


def _key(proc: psutil.Process) -> tuple[int, float]:
    return proc.pid, proc.create_time()  # a pid reused by a new process is a new key


def machine_busy_s() -> float:
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


@dataclass
class _Server:
    proc: psutil.Process
    own: float = 0.0  # its own and its reaped children's CPU at the start
    children: dict[tuple[int, float], float] = field(default_factory=dict)  # live children's CPU at the start

    def snapshot(self) -> tuple[float, dict[tuple[int, float], float]]:
        with self.proc.oneshot():
            t = self.proc.cpu_times()
            own = _cpu(t) + t.children_user + t.children_system
        kids = {}
        for child in self.proc.children(recursive=True):
            try:
                kids[_key(child)] = _cpu(child.cpu_times())
            except psutil.Error:
                continue  # gone between the listing and the read: its CPU is in the reaped children's
        return own, kids

    def start(self) -> None:
        self.own, self.children = self.snapshot()

    def used(self) -> float:
        own, kids = self.snapshot()
        alive = sum(cpu - self.children.get(key, 0.0) for key, cpu in kids.items())
        died_before = sum(cpu for key, cpu in self.children.items() if key not in kids)
        return own - self.own + alive - died_before


@dataclass
class CpuGroups:
    """``with CpuGroups(...) as cpu:`` measures the window; ``cpu.result()`` then gives seconds per part.

    ``sessions``: part name -> pids whose sessions make up the part (more can be added with :meth:`add_session`
    while it runs); ``servers``: part name -> pid of a shared server process (or None: not measured)."""

    sessions: dict[str, list[int]] = field(default_factory=dict)
    servers: dict[str, int | None] = field(default_factory=dict)
    interval: float = SAMPLE_SECONDS

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[tuple[int, float], list] = {}  # key -> [part, baseline, last]
        self._servers = {name: _Server(psutil.Process(pid)) for name, pid in self.servers.items() if pid}
        self._stop = threading.Event()
        self._opening = True
        self._wall = self._busy = 0.0
        self._harness = psutil.Process()

    def add_session(self, part: str, pid: int) -> None:
        with self._lock:
            self.sessions.setdefault(part, []).append(pid)

    def __enter__(self) -> "CpuGroups":
        for server in self._servers.values():
            server.start()
        self._harness_start = _cpu(self._harness.cpu_times())
        self._busy = machine_busy_s()
        self._wall = time.monotonic()
        self._sample()  # the baseline of every process already running
        self._opening = False
        self._thread = threading.Thread(target=self._loop, name="bench-cpu-groups", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self._wall = time.monotonic() - self._wall
        self._busy = machine_busy_s() - self._busy
        self._server_used = {name: server.used() for name, server in self._servers.items()}
        self._harness_used = _cpu(self._harness.cpu_times()) - self._harness_start

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _part_of_session(self) -> dict[int, str]:
        with self._lock:
            parts = {}
            for part, pids in self.sessions.items():
                for pid in pids:
                    try:
                        parts[os.getsid(pid)] = part
                    except ProcessLookupError:
                        continue  # ended: what it used was sampled while it ran
            return parts

    def _sample(self) -> None:
        parts = self._part_of_session()
        for proc in psutil.process_iter():
            try:
                part = parts.get(os.getsid(proc.pid))
                if part is None:
                    continue
                key, used = _key(proc), _cpu(proc.cpu_times())
            except (psutil.Error, ProcessLookupError, PermissionError):
                continue
            seen = self._seen.get(key)
            if seen is None:
                self._seen[key] = [part, used if self._opening else 0.0, used]
            else:
                seen[2] = used

    def result(self) -> dict:
        """CPU seconds per part, the harness's own, the machine's busy time and what none of them used."""
        parts: dict[str, float] = {name: 0.0 for name in self.sessions}
        for part, baseline, last in self._seen.values():
            parts[part] += last - baseline
        parts.update(self._server_used)
        ours = sum(parts.values()) + self._harness_used
        return {
            "wall_s": round(self._wall, 2),
            "parts_s": {name: round(seconds, 2) for name, seconds in parts.items()},
            "harness_s": round(self._harness_used, 2),
            "machine_busy_s": round(self._busy, 2),
            "not_ours_s": round(self._busy - ours, 2),
            "machine_utilisation": round(self._busy / (self._wall * (os.cpu_count() or 1)), 3),
        }
