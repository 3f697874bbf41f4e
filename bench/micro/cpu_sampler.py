"""A statistical profiler on the process's CPU clock: ``signal.ITIMER_PROF`` interrupts the main thread every
``interval`` seconds of CPU (user + system) and the stack it interrupted is counted. Unlike cProfile it does not
slow Python calls down more than C work, so its shares are those of the unprofiled run."""

from __future__ import annotations

import collections
import signal
import sys
from types import FrameType
from typing import TextIO


class CpuSampler:
    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.samples = 0
        self.inclusive: collections.Counter[str] = collections.Counter()
        self.own: collections.Counter[str] = collections.Counter()

    def _sample(self, signum: int, frame: FrameType | None) -> None:
        self.samples += 1
        seen: set[str] = set()
        first = True
        while frame is not None:
            code = frame.f_code
            name = f"{code.co_filename.split('site-packages/')[-1]}:{code.co_firstlineno}({code.co_name})"
            if first:
                self.own[name] += 1
                first = False
            if name not in seen:  # a recursive function counts once per sample
                seen.add(name)
                self.inclusive[name] += 1
            frame = frame.f_back

    def __enter__(self) -> CpuSampler:
        signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def report(self, top: int = 60, out: TextIO = sys.stderr) -> None:
        """The ``top`` functions by share of CPU samples, with their children (inclusive) and alone (own)."""
        total = max(self.samples, 1)
        print(f"{self.samples} samples, every {self.interval * 1000:.1f} ms of CPU", file=out)
        for title, counts in (("inclusive", self.inclusive), ("own", self.own)):
            print(f"-- {title}", file=out)
            for name, n in counts.most_common(top):
                print(f"{100 * n / total:6.1f} %  {name}", file=out)
