"""The micro-benchmarks at tiny sizes, so they cannot rot. The smoke test runs `--no-micro`; the CAS benchmark's
publishers once died on a renamed field without any test noticing, and its parent waited 600 s for them."""

from __future__ import annotations

import pytest

from bench.micro import cas, lookup, planning, propagation, reconcile
from bench.workspace import Workspace

pytestmark = pytest.mark.postgres


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
