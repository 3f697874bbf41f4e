"""The benchmark at tiny sizes, so it cannot rot: the floor (on one process and on two) and our batched path run and
agree, and the report judges B against both floors; the two-process floor writes what the floor writes; the
depends-on-past measurement of ours runs and its snapshot counts every order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.report import write_report

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.release


def _report(results: dict, tmp_path: Path) -> str:
    write_report(results, tmp_path / "BENCHMARKS.md")
    return (tmp_path / "BENCHMARKS.md").read_text()


def test_benchmark_runs_at_tiny_sizes_and_contenders_agree(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--days", "2", "--orders-per-day", "30", "--only", "F,F2,B", "--reps", "1",
         "--no-past", "--no-micro", "--no-doc", "--tables-days", "2", "--tables-reps", "1",
         "--results-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [result_file] = tmp_path.glob("*.json")
    results = json.loads(result_file.read_text())
    assert results["checks_agree"] is True
    assert set(results["contenders"]) == {"F", "F2", "B"}
    assert results["contenders"]["B"]["check"]["days"] == 2 and results["contenders"]["B"]["runs"] >= 1
    # F2: one day on each of its two processes, together every day, checked like F.
    f2 = results["contenders"]["F2"]
    assert f2["details"]["spans"] == [["2022-09-01", "2022-09-01"], ["2022-09-02", "2022-09-02"]]
    assert f2["check"] == results["contenders"]["F"]["check"] and f2["runs"] == 0 and f2["cpu_s"] > 0
    # B against the floor: in CPU against F, in wall against F2, as the targets table shows them.
    ratios = results["ratios"]
    assert ratios["B/F CPU"] > 0 and ratios["B/F2"] > 0
    text = _report(results, tmp_path)
    assert "| **F2** floor on two processes" in text
    assert f"| B/F in CPU (default path vs the plain loop, side by side, 2 d) | batches near the floor |  | " \
           f"{ratios['B/F CPU']} | ≤ 2.0 |" in text
    assert f"| B/F2 in wall (default path vs the plain loop on two processes, side by side, 2 d) | batches near the " \
           f"floor |  | {ratios['B/F2']} | ≤ 2.0 |" in text
    # One repetition each here (each of ours starts its own daemon); interleaving and medians over several are
    # tests/bench/test_statistics.py's.
    assert [o["rep"] for o in results["repetitions"]["F"]] == [o["rep"] for o in results["repetitions"]["F2"]] == [0]
    assert results["contenders"]["B"]["reps"]["n"] == 1
    assert results["contenders"]["B"]["details"]["daemon_command"].startswith("backfill-assets-daemon run -m ")
    # The published tables' cost: B with the Iceberg tables on and off; the table holds every published day and a
    # reader of it (pyiceberg) sees the same revenue as the catalog.
    tables = results["published_tables"]
    assert tables["checks_agree"] is True and tables["days_missing"] == 0 and tables["lost_commits"] == 0
    assert tables["modes"]["on"]["status"] == ["completed"] and tables["modes"]["off"]["status"] == ["completed"]
    assert tables["latency"]["n"] == tables["publishes_per_run"] == 2 * 3
    assert tables["wall_ratio"] > 0


def test_the_two_process_floor_writes_exactly_the_files_the_floor_writes(tmp_path):
    from bench.contenders import floor
    from bench.workspace import Sizes, Workspace

    ws, sizes = Workspace(root=tmp_path / "ws"), Sizes(days=3, orders_per_day=30)
    try:
        ws.seed(sizes)
        one, two = floor.run(ws, sizes, "F"), floor.run(ws, sizes, "F2")
        files = {name: sorted(p.relative_to(ws.root / name / "out") for p in (ws.root / name / "out").rglob("*")
                              if p.is_file()) for name in ("F", "F2")}
        assert files["F"] == files["F2"] and len(files["F"]) == 3 * 3  # 3 assets x 3 days
        for path in files["F"]:
            assert pq.read_table(ws.root / "F" / "out" / path).equals(pq.read_table(ws.root / "F2" / "out" / path))
    finally:
        ws.close()
    assert two.details == {"processes": 2, "spans": [["2022-09-01", "2022-09-02"], ["2022-09-03", "2022-09-03"]]}
    assert one.details["processes"] == 1 and two.check == one.check and two.check["missing_days"] == 0


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
