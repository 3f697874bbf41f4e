"""What the micro-benchmarks that compare variants in fresh interpreters share: each variant measured ``reps``
times, the order reversed every other repetition so that neither variant always runs first, each measurement a
``--one`` run of the benchmark's own module in a fresh interpreter that prints its figures as one JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ..workspace import REPO


def alternate(variants: Sequence[str], reps: int, measure: Callable[[str], dict]) -> dict[str, list[dict]]:
    """``measure(variant)`` for every variant, ``reps`` times, alternating the order; per variant, in order run."""
    measured: dict[str, list[dict]] = {v: [] for v in variants}
    for rep in range(reps):
        for variant in (variants if rep % 2 == 0 else variants[::-1]):
            measured[variant].append(measure(variant))
    return measured


def measure_in_fresh_interpreter(command: list[str], name: str, env: dict[str, str] | None = None) -> dict:
    """Run ``python <command>`` from the repository and return the JSON its last line prints."""
    done = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(measure_one: Callable[[str, int, Path], dict], run: Callable[..., dict]) -> None:
    """``python -m <benchmark> --one VARIANT SIZE FOLDER`` measures one variant in this interpreter; with integer
    arguments or none, ``run(*arguments)`` alternates the variants in fresh interpreters. Either prints JSON."""
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(measure_one(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
    else:
        print(json.dumps(run(*(int(a) for a in sys.argv[1:])), indent=2))
