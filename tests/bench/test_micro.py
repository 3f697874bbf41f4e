"""The micro-benchmarks at tiny sizes, so they cannot rot. The smoke test runs `--no-micro`; the CAS benchmark's
publishers once died on a renamed field without any test noticing, and its parent waited 600 s for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.locations import TEN_YEARS
from bench.micro import (
    alembic_scripts,
    between_trees,
    cas,
    driver_tick,
    driver_tick_request,
    lookup,
    planning,
    process_gc,
    propagation,
    reconcile,
)
from bench.report import process_gc_paragraph
from bench.workspace import Workspace

pytestmark = [pytest.mark.postgres, pytest.mark.release]


@pytest.fixture
def workspace():
    ws = Workspace()
    try:
        yield ws
    finally:
        ws.close()


def test_the_cas_micro_benchmark_runs_and_reports_both_latencies(pg_server, monkeypatch):
    monkeypatch.setattr(cas, "PER_PUBLISHER", 3)
    result = cas.run(pg_server.admin_url)
    assert result["publishes"] == cas.PUBLISHERS * 3
    assert result["cas"]["n"] == result["baseline_update_insert"]["n"] == cas.PUBLISHERS * 3
    assert result["p99_ratio"] > 0


def test_the_other_micro_benchmarks_run_at_tiny_sizes(pg_server, workspace, monkeypatch):
    monkeypatch.setattr(lookup, "LOOKUPS", 20)
    monkeypatch.setattr(reconcile, "DAYS", 10)
    monkeypatch.setattr(propagation, "EVENTS", 20)
    monkeypatch.setattr(planning, "FIRST", "2021-12-01")
    looked_up = lookup.run(pg_server.admin_url, workspace)
    assert looked_up["sqlite"]["current"]["n"] == looked_up["postgresql"]["current"]["n"] == 20
    assert planning.run(workspace)["partitions"] == 31
    for backend in reconcile.run(pg_server.admin_url, workspace).values():
        assert (backend["cells"], backend["complete"], backend["gaps"]) == (20, True, 0), backend
    for backend in propagation.run(pg_server.admin_url, workspace).values():
        assert (backend["events"], backend["cascaded_cells"]) == (20, 20), backend


def test_the_driver_tick_micro_benchmark_runs_at_a_tiny_size(workspace, monkeypatch):
    monkeypatch.setattr(driver_tick, "SIZES", {"small": {"runs": 10, "closed": 2, "queued": 2},
                                               "large": {"runs": 40, "closed": 4, "queued": 8}})
    monkeypatch.setattr(driver_tick, "CHANGING_TICKS", 2)
    monkeypatch.setattr(driver_tick, "IDLE_TICKS", 2)
    result = driver_tick.run(workspace)  # asserts itself that the cells others' runs write were left alone
    in_flight_cells = 2 * driver_tick.MAX_ACTIVE * len(driver_tick.ASSETS)  # a running and a queued run per slot
    for size in ("small", "large"):
        assert result[size]["idle_tick_median_s"] > 0 and result[size]["submitted"] == in_flight_cells
    assert result["large"]["runs"] > result["small"]["runs"]


def test_the_driver_tick_micro_benchmark_measures_one_request_by_its_size(tmp_path):
    result = driver_tick_request.request_ticks(tmp_path, days=12, done=2, per_run="2", location=TEN_YEARS, reps=1,
                                               idle=1)
    # 4 runs of 2 days (2 slots, a queued run behind each) settle at once, then the last 2 days run.
    assert (result["cells"], result["partitions_per_run"], result["settled_per_settlement"]) == (36, 2, 24)
    assert [result[f"{kind}_cpu_s"]["n"] for kind in driver_tick_request.KINDS] == [1, 1, 1]


def test_the_collector_micro_benchmark_measures_both_variants_and_renders():
    result = process_gc.run(days=1, reps=1)
    for variant in process_gc.VARIANTS:
        for key in process_gc.MEASURES:
            assert result[variant][key]["median"] > 0, (variant, key, result)
    [paragraph] = [line for line in process_gc_paragraph(result) if line]
    assert "`python -m bench.micro.process_gc`" in paragraph and f"**{result['run_cpu_ms_ratio']}**" in paragraph


def test_the_alembic_scripts_micro_benchmark_compares_the_shipped_storage_with_dagsters():
    result = alembic_scripts.run(runs=2, reps=1)
    assert result["dagster"]["storage"] == "SqliteEventLogStorage"
    assert result["shipped"]["storage"] == "SqliteEventLogReusingEngines"
    assert result["ratio"] > 0


def test_a_micro_benchmark_alternates_between_two_checkouts():
    tree = Path(__file__).resolve().parents[2]
    result = between_trees.run("bench.micro.alembic_scripts", "shipped", 1, 2, [tree, tree], figure="cpu_ms")
    [found] = result["trees"].values()  # one checkout named twice: measured 2 x 2 times
    assert len(found["values"]) == 4 and found["min"] > 0 and found["ratio_to_first"] == 1.0
