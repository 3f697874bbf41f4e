"""The publish-CAS micro-benchmark at a tiny size, so it cannot rot (it did once: `make bench` skips nothing, but
the smoke test runs `--no-micro`, and a renamed field broke its publishers without any test noticing)."""

from __future__ import annotations

import pytest

from bench.micro import cas

pytestmark = pytest.mark.postgres


def test_the_cas_micro_benchmark_runs_and_reports_both_latencies(pg_server, monkeypatch):
    monkeypatch.setattr(cas, "PER_PUBLISHER", 3)
    result = cas.run(pg_server.admin_url)
    assert result["publishes"] == cas.PUBLISHERS * 3
    assert result["cas"]["n"] == result["baseline_update_insert"]["n"] == cas.PUBLISHERS * 3
    assert result["p99_ratio"] > 0
