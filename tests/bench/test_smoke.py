"""The benchmark at tiny sizes, so it cannot rot: the floor and our batched path run and agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_benchmark_runs_at_tiny_sizes_and_contenders_agree(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--days", "2", "--orders-per-day", "30", "--only", "F,B",
         "--no-micro", "--no-doc", "--results-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [result_file] = tmp_path.glob("*.json")
    results = json.loads(result_file.read_text())
    assert results["checks_agree"] is True
    assert set(results["contenders"]) == {"F", "B"}
    assert results["contenders"]["B"]["check"]["days"] == 2 and results["contenders"]["B"]["runs"] >= 1
