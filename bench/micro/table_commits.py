"""What one Iceberg sync costs as its table grows: ``python -m bench.micro.table_commits [COMMITS] [DAYS]``.

One asset's published table on a fresh SQLite catalog and warehouse: ``DAYS`` new days published, then synced (one
commit), ``COMMITS`` times; the CPU of each sync, reported as the mean of each fifth of the commits (the first
includes importing pyiceberg). A commit whose cost grows with the table's snapshots shows as rising fifths.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.iceberg_table import IcebergTables
from tests.tables.iceberg_helpers import iceberg_settings
from tests.tables.pg_table_helpers import published

ASSET = "t_commits"
FIRST = date(2022, 9, 1)


def run(commits: int = 100, days: int = 3) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-table-commits-") as tmp:
        catalog, warehouse = Catalog(f"sqlite:///{tmp}/catalog.db"), Warehouse(str(Path(tmp) / "warehouse"))
        tables = IcebergTables(iceberg_settings(f"sqlite:///{tmp}/iceberg.db", str(warehouse.root)))
        cpu_ms: list[float] = []
        for n in range(commits):
            for d in range(days):
                day = (FIRST + timedelta(n * days + d)).isoformat()
                published(catalog, warehouse, ASSET, day, f"run-{n}-{d}", rows=50)
            started = time.process_time()
            tables.sync(catalog, ASSET)
            cpu_ms.append((time.process_time() - started) * 1000)
    fifth = max(1, commits // 5)
    means = [round(sum(cpu_ms[i:i + fifth]) / len(cpu_ms[i:i + fifth]), 1) for i in range(0, commits, fifth)]
    return {"commits": commits, "days_per_commit": days, "cpu_ms_per_commit_by_fifth": means}


if __name__ == "__main__":
    print(json.dumps(run(*(int(a) for a in sys.argv[1:])), indent=2))
