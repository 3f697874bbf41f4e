"""docs/BENCHMARKS.md's table of the warehouse on S3 against a local folder, per asset-day (``bench/micro/storage``).

``python -m bench.storage_report <results.json>`` prints the section alone, from a results file of ``make bench``
or of ``python -m bench.micro.storage`` run by itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .tables import table

KEY = "warehouse_s3_vs_local"  # the micro-benchmark's key in a results file's "micro"
OPERATIONS = {
    "write": "write (Parquet + manifest)",
    "read": "read back, sha256 verified",
    "gate": "whole gate (write, audits, publish CAS, read)",
}


def _size_label(size: dict) -> str:
    return f"{size['orders']:,} ({size['rows']:,} rows, {size['parquet_bytes'] / 1024:,.0f} KiB)"


def _load_text(result: dict) -> str:
    load = result.get("load_average_1min")
    return f" Load average (1 min) {load[0]} before, {load[1]} after." if load else ""


def storage_section(result: dict) -> list[str]:
    lines = [f"**Warehouse on S3 vs a local folder, per asset-day**: one day of `raw_orders` ({result['day']}) at "
             f"each size, on S3 ({result['server']}) and on a local folder, catalog on {result['catalog']}; "
             f"{result['repetitions']} asset-days per operation, size and backend after {result['warmup']} untimed "
             "warm-up ones, the backends alternating within the run. Ratio: S3 / local of the same percentile in "
             f"this run.{_load_text(result)}", ""]
    rows = []
    for size in result["sizes"].values():
        for n, (op, label) in enumerate(OPERATIONS.items()):
            m = size[op]
            rows.append([_size_label(size) if n == 0 else "", label, m["local"]["p50_ms"], m["local"]["p90_ms"],
                         m["s3"]["p50_ms"], m["s3"]["p90_ms"], f"**{m['p50_ratio']}**", m["p90_ratio"],
                         m["p50_added_ms"]])
    lines += table(["orders/day", "per asset-day", "local p50 ms", "local p90 ms", "S3 p50 ms", "S3 p90 ms",
                    "S3/local p50", "S3/local p90", "S3 adds (p50) ms"], rows)
    lines += ["", "On loopback the S3 path costs s3fs, HTTP and the server's work, but no network: a bucket on "
              "another host adds its round trip to every request of the asset-day."]
    return lines


if __name__ == "__main__":
    results = json.loads(Path(sys.argv[1]).read_text())
    print("\n".join(storage_section(results["micro"][KEY])))
