"""The benchmark at tiny sizes, so it cannot rot: the floor and our batched path run and agree; the
depends-on-past measurement of ours runs and its snapshot counts every order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.release


def test_benchmark_runs_at_tiny_sizes_and_contenders_agree(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--days", "2", "--orders-per-day", "30", "--only", "F,B", "--reps", "1",
         "--no-past", "--no-micro", "--no-doc", "--tables-days", "2", "--tables-reps", "1",
         "--results-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [result_file] = tmp_path.glob("*.json")
    results = json.loads(result_file.read_text())
    assert results["checks_agree"] is True
    assert set(results["contenders"]) == {"F", "B"}
    assert results["contenders"]["B"]["check"]["days"] == 2 and results["contenders"]["B"]["runs"] >= 1
    # One repetition each here (each of ours starts its own daemon); interleaving and medians over several are
    # tests/bench/test_statistics.py's.
    assert [o["rep"] for o in results["repetitions"]["F"]] == [0]
    assert results["contenders"]["B"]["reps"]["n"] == 1
    assert results["contenders"]["B"]["details"]["daemon_command"].startswith("backfill-assets-daemon run -m ")
    # The published tables' cost: B with the Iceberg tables on and off; the table holds every published day and a
    # reader of it (pyiceberg) sees the same revenue as the catalog.
    tables = results["published_tables"]
    assert tables["checks_agree"] is True and tables["days_missing"] == 0 and tables["lost_commits"] == 0
    assert tables["modes"]["on"]["status"] == ["completed"] and tables["modes"]["off"]["status"] == ["completed"]
    assert tables["latency"]["n"] == tables["publishes_per_run"] == 2 * 3
    assert tables["wall_ratio"] > 0


def test_the_depends_on_past_measurement_of_ours_runs_at_tiny_sizes(tmp_path):
    from bench.past import run
    from bench.past_plan import PastPlan
    from bench.workspace import Sizes, Workspace

    ws = Workspace(root=tmp_path / "ws")
    plan = PastPlan(ui_days=2, chain_days=2)
    try:
        ws.seed(Sizes(days=4, orders_per_day=30))
        result = run(ws, plan, max_active=2, timeout=240, which=("ours",), log=lambda _: None)
    finally:
        ws.close()
    chain, ui = result["ours"]["chain"], result["ours"]["ui"]
    assert result["checks"] == {"chain_counts_every_order": True}
    assert (chain["status"], chain["chain"]["days"], chain["chain"]["beyond_step"]["n"]) == ("completed", 2, 1)
    assert chain["first_run_start_s"] < chain["first_run_after_invocation_s"]
    assert ui["status"] == "COMPLETED_SUCCESS" and ui["days"] == 2 and ui["runs"] == 2
