"""F, the floor: the same transforms in a plain Python loop over the days. No orchestration, checks or catalog.

F2 is the same loop with the days split in two halves of consecutive days, one process each, both running at once:
on 2 cores it uses the machine as the default request path (B) does with its two run slots, so B's wall is also
compared with a floor that has both cores. The two processes write the same files as F's one, in one folder.

Each loop runs as its own process (``python -m bench.contenders.floor ROOT SOURCE FIRST LAST``) so that it is
measured like every other contender: interpreter start-up and imports included.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from backfill_assets.examples.orders.source import SourceSystem

from ..checks import revenue_from_files
from ..measure import ProcessSampler
from ..outcome import Outcome
from ..plain import ASSETS, CALENDAR, run_asset_day
from ..workspace import REPO, Sizes, Workspace

# The floor's contenders: how many loop processes each runs at once.
PROCESSES = {"F": 1, "F2": 2}
TITLES = {"F": "floor: plain Python loop", "F2": "floor on two processes: the days split in two halves, at once"}


def loop(root: Path, source_url: str, first: str, last: str) -> None:
    source = SourceSystem(source_url)
    for key in CALENDAR.keys_between(first, last):
        for asset in ASSETS:
            run_asset_day(root, source, asset, key)


def spans(keys: list[str], parts: int) -> list[tuple[str, str]]:
    """``keys`` (consecutive days) cut into at most ``parts`` runs of consecutive days as even as can be, the first
    ones a day longer: (first, last) of each; fewer runs than ``parts`` when there are fewer days."""
    parts = max(1, min(parts, len(keys)))
    size, extra = divmod(len(keys), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append((keys[start], keys[end - 1]))
        start = end
    return out


def run(ws: Workspace, sizes: Sizes, name: str = "F") -> Outcome:
    """F (one loop) or F2 (two loops at once over the two halves of the days) into one output folder, measured as
    one contender: the wall from the first start to the last exit, the CPU and memory of every loop process."""
    out = ws.dir(name) / "out"
    days = spans(sizes.keys, PROCESSES[name])
    procs: list[subprocess.Popen] = []
    with ProcessSampler() as sampler:
        try:
            for first, last in days:
                argv = [sys.executable, "-m", "bench.contenders.floor", str(out), ws.source_url, first, last]
                procs.append(subprocess.Popen(argv, cwd=REPO))
                sampler.add_root(procs[-1].pid)
            codes = [proc.wait() for proc in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    if any(codes):
        raise RuntimeError(f"floor loop(s) of {name} exited with {codes}")
    return Outcome(name, TITLES[name], sampler.usage, 0, revenue_from_files(out, sizes.keys),
                   {"processes": len(days), "spans": [list(span) for span in days]})


if __name__ == "__main__":
    loop(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
