"""Readers that know nothing of backfill_assets, polling a published Iceberg table until told to stop.

Run as a script (``python tests/tables/table_readers.py CONFIG_JSON``), not as part of the tests package: it
imports pyiceberg, pyarrow, pandas, DuckDB and polars only, and checks that backfill_assets never got imported.
Each reader is a thread that writes one JSON line per observation to ``<out>/<reader>.jsonl``:

- ``pyiceberg``: the table loaded from the SQL catalog, one scan: its planned file paths, and per day the rows and
  the sum of the measure as read to Arrow and to pandas (the same snapshot).
- ``duckdb``: ``table.scan().to_duckdb(...)``, grouped by day in SQL.
- ``polars``: ``pl.scan_iceberg(table)`` (planned by pyiceberg), grouped by day.
- ``folder``: the naive reader, DuckDB's ``read_parquet`` over every Parquet file under the asset's folder.

Each observation also records the phase the test had announced (a file the test rewrites) when it began, so the
test can wait for every reader to have looked after an event instead of sleeping.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import duckdb
import polars as pl
import pyarrow.compute as pc
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchTableError

DAY = "partition_date"
# Between two observations of one reader: leaves the shared cores to the daemon and its runs.
PACE_SECONDS = 0.5
DAYS_SQL = "SELECT CAST({day} AS VARCHAR), count(*), sum({measure}) FROM {source} GROUP BY 1"


def arrow_days(table: Any, measure: str) -> dict[str, list]:
    """Per day of an Arrow table: [rows, sum of the measure]."""
    grouped = table.group_by(DAY).aggregate([([], "count_all"), (measure, "sum")])
    days = grouped.column(DAY).to_pylist()
    rows = grouped.column("count_all").to_pylist()
    sums = grouped.column(f"{measure}_sum").to_pylist()
    return {str(d): [int(r), float(s or 0.0)] for d, r, s in zip(days, rows, sums, strict=True)}


class Readers:
    def __init__(self, config: dict[str, Any]):
        self.config = config
        self.out = Path(config["out"])
        self.stop_file = Path(config["stop_file"])
        self.phase_file = Path(config["phase_file"])
        self.measure = config["measure"]

    def catalog(self) -> SqlCatalog:
        # The name the tables are registered under (docs/READING.md): any other name finds no table.
        return SqlCatalog(self.config["catalog_name"], uri=self.config["catalog_uri"],
                          warehouse=self.config["tables_location"])

    def phase(self) -> int:
        try:
            return int(self.phase_file.read_text() or 0)
        except (FileNotFoundError, ValueError):
            return 0

    def loop(self, name: str, observe: Callable[[], dict[str, Any]]) -> None:
        with (self.out / f"{name}.jsonl").open("a", buffering=1) as sink:
            number = 0
            while not self.stop_file.exists():
                number += 1
                record: dict[str, Any] = {"reader": name, "n": number, "phase": self.phase(), "t0": time.time()}
                try:
                    record.update(observe())
                except NoSuchTableError:
                    record.update(table=False, days={})
                except Exception as exc:  # noqa: BLE001 - every failed read is an observation the test judges
                    record["error"] = "".join(traceback.format_exception_only(exc)).strip()[:2000]
                record["t1"] = time.time()
                sink.write(json.dumps(record) + "\n")
                time.sleep(PACE_SECONDS)

    # ---- the readers ----------------------------------------------------------------------------------------

    def pyiceberg_reader(self) -> Callable[[], dict[str, Any]]:
        catalog = self.catalog()

        def observe() -> dict[str, Any]:
            table = catalog.load_table(self.config["table"])
            snapshot = table.current_snapshot()
            if snapshot is None:
                return {"table": True, "snapshot": None, "files": [], "days": {}, "pandas_days": {}}
            scan = table.scan()  # bound to the snapshot loaded above: planning and reading agree
            files = sorted(task.file.file_path for task in scan.plan_files())
            arrow = scan.to_arrow()
            frame = scan.to_pandas()
            by_day = frame.groupby(frame[DAY].astype(str))[self.measure].agg(["count", "sum"])
            summary = snapshot.summary.additional_properties if snapshot.summary is not None else {}
            return {
                "table": True,
                "snapshot": snapshot.snapshot_id,
                "summary_seq": summary.get("backfill-assets.publish-seq"),
                "files": files,
                "days": arrow_days(arrow, self.measure),
                "pandas_days": {d: [int(r["count"]), float(r["sum"])] for d, r in by_day.iterrows()},
                "null_days": int(pc.sum(pc.is_null(arrow.column(DAY))).as_py() or 0) if arrow.num_rows else 0,
            }

        return observe

    def duckdb_reader(self) -> Callable[[], dict[str, Any]]:
        catalog = self.catalog()

        def observe() -> dict[str, Any]:
            table = catalog.load_table(self.config["table"])
            connection = table.scan().to_duckdb("published")
            try:
                rows = connection.sql(DAYS_SQL.format(day=DAY, measure=self.measure, source="published")).fetchall()
            finally:
                connection.close()
            return {"table": True, "days": {d: [int(n), float(s or 0.0)] for d, n, s in rows}}

        return observe

    def polars_reader(self) -> Callable[[], dict[str, Any]]:
        catalog = self.catalog()

        def observe() -> dict[str, Any]:
            table = catalog.load_table(self.config["table"])
            grouped = (
                pl.scan_iceberg(table)
                .group_by(DAY)
                .agg(pl.len().alias("rows"), pl.col(self.measure).sum().alias("total"))
                .collect()
            )
            return {"table": True, "days": {str(d): [int(n), float(t or 0.0)] for d, n, t in grouped.iter_rows()}}

        return observe

    def folder_reader(self) -> Callable[[], dict[str, Any]]:
        source = f"read_parquet('{self.config['folder']}/**/*.parquet', union_by_name = true)"

        def observe() -> dict[str, Any]:
            connection = duckdb.connect()
            try:
                rows = connection.sql(DAYS_SQL.format(day=DAY, measure=self.measure, source=source)).fetchall()
            finally:
                connection.close()
            return {"days": {d: [int(n), float(s or 0.0)] for d, n, s in rows}}

        return observe


def main() -> None:
    config = json.loads(sys.argv[1])
    readers = Readers(config)
    observers = {
        "pyiceberg": readers.pyiceberg_reader,
        "duckdb": readers.duckdb_reader,
        "polars": readers.polars_reader,
        "folder": readers.folder_reader,
    }
    threads = [threading.Thread(target=readers.loop, args=(name, make()), name=name, daemon=True)
               for name, make in observers.items() if name in config["readers"]]
    assert not any(m == "backfill_assets" or m.startswith("backfill_assets.") for m in sys.modules), \
        "the readers must know nothing of backfill_assets"
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
