"""The Celery throughput benchmark's arithmetic and its section of docs/BENCHMARKS.md, from synthetic trials (no
stack is started: one real trial takes minutes, see bench/distributed.py)."""

from __future__ import annotations

import json

from bench import report
from bench.distributed import schedule
from bench.distributed_reading import speedup_bound
from bench.distributed_report import KEY, celery_section
from bench.distributed_summary import summarise

PHASE = "step body (start -> end)"


def trial(index: int, workers: int, wall: float, ok: bool = True) -> dict:
    cells = 120
    stats = {"n": 8, "median_s": 5.0, "max_s": 9.0, "total_s": 40.0}
    parts = {f"worker w{n}": 10.0 for n in range(1, workers + 1)} | {"dagster-daemon (+ run processes)": 20.0,
                                                                     "PostgreSQL (whole server)": 30.0}
    return {
        "index": index, "workers": workers, "request_id": f"req-{index}", "partitions_per_run": 20,
        "wall_s": wall, "cells_per_min": round(cells / wall * 60, 1), "create_command_s": 3.0,
        "load_average": {"before": [2.0, 2.0, 2.0], "after": [3.0, 2.0, 2.0]},
        "cpu": {"parts_s": parts, "harness_s": 1.0, "machine_busy_s": 150.0, "not_ours_s": 5.0,
                "machine_utilisation": 0.9, "workers_s": 10.0 * workers, "rest_s": 51.0, "ours_s": 51.0 + 10 * workers},
        "postgresql": {"ours": {"sessions": 3000, "active_s": 20.0, "transactions": 9000},
                       "by_database": {"dagster": {"sessions": 2900, "active_s": 15.0, "transactions": 8000}},
                       "ours_share_of_active": 0.8},
        "source_pool_slots": 1,
        "check": {"ok": ok, "problems": [] if ok else ["2 cell(s) published more than once"], "cells": cells,
                  "cells_per_worker": {f"w{n}": cells // workers for n in range(1, workers + 1)},
                  "revenue": {"days": 40, "missing_days": 0, "orders": 800_000, "revenue_cny": 1.5}},
        "steps": {"runs": 2, "steps": 8, "first_step_submitted_s": 12.0, "phases": {PHASE: stats},
                  "step_body_by_asset": {"chunk_raw_orders": stats},
                  "workers": {f"w{n}": {"steps": 8 // workers, "busy_s": 40.0, "busy_share": 0.5}
                              for n in range(1, workers + 1)},
                  "cold_pickup_s": {f"w{n}": 4.0 for n in range(1, workers + 1)}, "overlaps_on_one_worker": 0,
                  "timeline": [{"run": 0, "step": "chunk_raw_orders", "worker": "w1", "hostname": "w1",
                                "submitted": 12.0, "picked": 13.0, "start": 13.1, "end": 20.0}]},
    }


def result(trials: list[dict]) -> dict:
    return {"days": 40, "first_day": "2022-09-01", "last_day": "2022-10-10", "orders_per_day": 20_000,
            "assets": ["raw_orders", "order_facts", "daily_revenue"], "repetitions": 2,
            "order": [t["workers"] for t in trials], "trials": trials, "summary": summarise(trials),
            "all_ok": all(t["check"]["ok"] for t in trials), "revenue_agrees": True}


def test_worker_counts_alternate_which_goes_first():
    assert schedule(2) == [1, 2, 2, 1]
    assert schedule(3) == [1, 2, 2, 1, 1, 2]


def test_a_trial_that_failed_its_checks_counts_in_no_figure():
    trials = [trial(0, 1, 120.0), trial(1, 2, 80.0), trial(2, 2, 10.0, ok=False), trial(3, 1, 100.0)]
    summary = summarise(trials)
    two = summary["configurations"]["2"]
    assert (two["trials"], two["failed_trials"], two["wall_s"]) == (1, 1, [80.0])
    one = summary["configurations"]["1"]
    assert one["wall_s_median"] == 110.0 and one["cells_per_min_median"] == round((60.0 + 72.0) / 2, 2)
    assert summary["ratio_2_over_1"] == round(90.0 / one["cells_per_min_median"], 3)
    assert summary["ratio_per_repetition"] == [1.5]  # the second pair had a failed trial


def test_the_section_shows_the_ratio_each_configuration_and_the_failed_trial():
    trials = [trial(0, 1, 120.0), trial(1, 2, 80.0), trial(2, 2, 10.0, ok=False), trial(3, 1, 100.0)]
    lines = celery_section({KEY: result(trials), "machine": {"nproc": 2}}, "measured elsewhere")
    text = "\n".join(lines)
    assert lines[0] == "*measured elsewhere*"
    assert f"**2-worker / 1-worker throughput: {summarise(trials)['ratio_2_over_1']}**" in text
    rows = [line for line in lines if line.startswith("| **")]
    assert [r.split(" | ")[0] for r in rows] == ["| **1**", "| **2**"]
    per_trial = [line for line in lines if line.startswith("| 2 | 2 |")]
    assert per_trial and per_trial[0].endswith("| **no** |")
    assert "3 of 4 trials passed every check" in text and "trial 2 (2 w): 2 cell(s) published more than once" in text
    assert PHASE in text
    assert "Steps: 4 of 4 started in a worker process of their trial" in text


def test_the_document_keeps_the_newest_stored_celery_figure_when_the_run_has_none(tmp_path, monkeypatch):
    stored = {"timestamp": "20261202T101010Z", "command": "python -m bench.distributed", "machine": {"nproc": 2},
              KEY: result([trial(0, 1, 120.0), trial(1, 2, 80.0)])}
    (tmp_path / f"20261202T101010Z-{KEY}.json").write_text(json.dumps(stored))
    monkeypatch.setattr(report, "RESULTS", tmp_path)
    lines = report._celery({"contenders": {}})
    assert "Not measured in the run above: `python -m bench.distributed` on 2026-12-02" in lines[0]
    assert report._celery({KEY: stored[KEY], "machine": {"nproc": 2}})[0].startswith("**Throughput")


def test_the_bound_from_the_request_shape_uses_the_one_worker_trials_own_step_times():
    trials = [trial(0, 1, 120.0), trial(1, 2, 80.0), trial(2, 2, 90.0), trial(3, 1, 100.0)]
    # A run's steps: 40 s of bodies over 2 runs = 20 s, its extract 5 s; outside the steps: wall - 40 s (80, 60).
    assert speedup_bound(result(trials)) == {"per_run_s": 20.0, "extract_s": 5.0, "outside_s": 70.0,
                                             "bound": round((70 + 2 * 20) / (70 + 5 + 20), 2)}
    assert "about **1.16** at most" in "\n".join(celery_section({KEY: result(trials), "machine": {"nproc": 2}}))


def test_bench_run_with_celery_keeps_the_figure_and_fails_when_a_trial_was_wrong(tmp_path, monkeypatch):
    from bench import distributed, run

    trials = [trial(0, 1, 120.0), trial(1, 2, 80.0, ok=False)]
    monkeypatch.setattr(distributed, "run", lambda ws, pg_url, **kw: {**result(trials), "all_ok": False})
    argv = ["--only", "F", "--no-micro", "--celery", "--days", "1", "--orders-per-day", "5", "--no-doc",
            "--results-dir", str(tmp_path)]
    assert run.main(argv) == 1
    [stored] = tmp_path.glob("*.json")
    assert json.loads(stored.read_text())[KEY]["trials"][1]["check"]["ok"] is False
