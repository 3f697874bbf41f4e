"""The S3-vs-local micro-benchmark at tiny sizes, so it cannot rot: it starts its own S3 server, writes, reads and
gates on both backends, and its section of docs/BENCHMARKS.md renders from what it returns."""

from __future__ import annotations

import os

from bench.micro import storage
from bench.storage_report import storage_section
from bench.workspace import Workspace


def test_the_storage_micro_benchmark_measures_both_backends_at_every_size(monkeypatch):
    monkeypatch.setattr(storage, "ORDERS_PER_DAY", (20, 60))
    monkeypatch.setattr(storage, "REPETITIONS", 3)
    monkeypatch.setattr(storage, "WARMUP", 1)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    ws = Workspace()
    try:
        result = storage.run(ws)
    finally:
        ws.close()
    assert "AWS_ENDPOINT_URL" not in os.environ  # the bench's server was this run's only, and is gone
    assert list(result["sizes"]) == ["20", "60"] and len(result["load_average_1min"]) == 2
    for orders, size in zip((20, 60), result["sizes"].values(), strict=True):
        assert size["orders"] == orders and size["rows"] >= orders and size["parquet_bytes"] > 0
        # Every asset-day of both loops (a plain write, a gate) left its data file and manifest as objects.
        assert size["s3_objects"] == 2 * 2 * (1 + 3)
        for op in storage.OPERATIONS:
            m = size[op]
            assert m["local"]["n"] == m["s3"]["n"] == 3, (orders, op, m)
            assert m["p50_ratio"] > 0 and m["p90_ratio"] > 0
            assert m["p50_added_ms"] == round(m["s3"]["p50_ms"] - m["local"]["p50_ms"], 3)
    section = storage_section(result)
    table = [line for line in section if line.startswith("| ")]
    assert len(table) == 1 + 2 * len(storage.OPERATIONS)  # a header, a row per size and operation
    assert table[1].startswith("| 20 (") and table[4].startswith("| 60 (")
