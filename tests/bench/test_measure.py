"""The sampler counts the contender's processes, never the benchmark's own (a root started in its session)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from bench.measure import ProcessSampler


def test_a_root_in_the_benchmarks_session_does_not_bring_the_benchmarks_own_cpu_in():
    own = psutil.Process()
    deadline = time.process_time() + 0.5
    while time.process_time() < deadline:  # this process has now used at least half a CPU second
        pass
    assert sum(own.cpu_times()[:2]) >= 0.5
    with ProcessSampler(interval=0.05) as sampler:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"])  # the same session
        sampler.add_root(child.pid)
        child.wait()
    # The child's interpreter start-up only: well under the half second this process burnt before.
    assert sampler.usage.cpu_s < 0.4
    assert sampler.usage.processes >= 1
