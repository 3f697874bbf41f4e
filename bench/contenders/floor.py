"""F, the floor: the same transforms in a plain Python loop over the days. No orchestration, checks or catalog.

Run as its own process (``python -m bench.contenders.floor ROOT SOURCE FIRST LAST``) so that it is measured
like every other contender: interpreter start-up and imports included.
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


def loop(root: Path, source_url: str, first: str, last: str) -> None:
    source = SourceSystem(source_url)
    for key in CALENDAR.keys_between(first, last):
        for asset in ASSETS:
            run_asset_day(root, source, asset, key)


def run(ws: Workspace, sizes: Sizes) -> Outcome:
    out = ws.dir("F") / "out"
    argv = [sys.executable, "-m", "bench.contenders.floor", str(out), ws.source_url, sizes.first, sizes.last]
    with ProcessSampler() as sampler:
        proc = subprocess.Popen(argv, cwd=REPO)
        sampler.add_root(proc.pid)
        if proc.wait() != 0:
            raise RuntimeError(f"floor loop exited with {proc.returncode}")
    return Outcome("F", "floor: plain Python loop", sampler.usage, 0, revenue_from_files(out, sizes.keys))


if __name__ == "__main__":
    loop(Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4])
