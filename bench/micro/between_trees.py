"""One micro-benchmark's variant measured on two or more checkouts of the code, alternating, for a change's before
and after: ``python -m bench.micro.between_trees MODULE VARIANT SIZE REPS TREE TREE...``, e.g.::

    git worktree add /tmp/before <commit>      # the code before the change
    python -m bench.micro.between_trees bench.micro.chunk_step shipped 30 6 /tmp/before .

Each measurement is the benchmark's own ``--one VARIANT SIZE FOLDER`` in a fresh interpreter started in the tree
(so it imports that tree's code) on an empty temporary folder; the trees alternate, the order reversed every other
repetition (``alternating.alternate``). Prints, per tree, the median and the smallest of the benchmark's figure
``--figure`` (default ``cpu_ms_per_asset_day``) and each tree's median over the first's. On a shared machine the
smallest is the steadier figure: other processes only ever add to a process's CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .alternating import alternate


def _one(module: str, variant: str, size: int, tree: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-trees-") as folder:
        env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "PROFILE")} | {"PYTHONPATH": str(tree)}
        done = subprocess.run([sys.executable, "-m", module, "--one", variant, str(size), folder], cwd=tree,
                              env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{module} in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


FIGURE = "cpu_ms_per_asset_day"


def run(module: str, variant: str, size: int, reps: int, trees: list[Path], figure: str = FIGURE) -> dict:
    names = [str(t.resolve()) for t in trees]
    measured = alternate(names, reps, lambda tree: _one(module, variant, size, Path(tree)))
    result: dict = {"module": module, "variant": variant, "size": size, "reps": reps, "figure": figure, "trees": {}}
    for tree, runs in measured.items():
        values = [r[figure] for r in runs]
        result["trees"][tree] = {"median": statistics.median(values), "min": min(values), "values": values}
    first = result["trees"][names[0]]["median"]
    for found in result["trees"].values():
        found["ratio_to_first"] = round(found["median"] / first, 3)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.micro.between_trees", description=__doc__.split("\n")[0])
    parser.add_argument("module")
    parser.add_argument("variant")
    parser.add_argument("size", type=int)
    parser.add_argument("reps", type=int)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--figure", default=FIGURE)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.module, args.variant, args.size, args.reps, args.trees, args.figure), indent=2))


if __name__ == "__main__":
    main()
