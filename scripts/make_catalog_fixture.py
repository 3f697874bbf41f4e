"""Make the SQLite catalog the schema-upgrade tests start from: one written by this checkout's code.

    python scripts/make_catalog_fixture.py                        # tests/fixtures/catalog_before_versioning.db
    python scripts/make_catalog_fixture.py --out tests/fixtures/catalog_at_0002.db

The committed file was made by the code from just before the catalog recorded a schema version, so the tests
prove that a catalog of that age is refused when opened and brought to head by ``backfill-assets catalog
upgrade``. When a revision changes the schema, run this on the code of the previous head to keep a catalog of
that age as a fixture too. The rows are few and fixed (ids, days, people); only the timestamps are the clock's.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "catalog_before_versioning.db"

REQUEST_ID = "req-20221101-fixture1"
CODE_VERSION = "git-fixture"
ASSET, DAYS = "order_facts", ("2022-10-01", "2022-10-02", "2022-10-03")
RUN_ID = "fixture-run-1"


def make(out: Path) -> None:
    from backfill_assets import graph_of
    from backfill_assets.engine.model.identity import RunIdentity, params_digest
    from backfill_assets.engine.model.intervals import iso, utc_now
    from backfill_assets.engine.model.request_input import RequestInput, build_spec
    from backfill_assets.engine.store import db
    from backfill_assets.engine.store.catalog import Catalog
    from backfill_assets.engine.store.ledger import Ledger
    from backfill_assets.examples.orders.definitions import defs

    graph = graph_of(defs)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "catalog.db"
        url = f"sqlite:///{path}"
        catalog = Catalog(url)
        spec = build_spec(graph, DAYS[-1], RequestInput(
            assets=[ASSET], from_day=DAYS[0], to_day=DAYS[-1], reason="fixture: FX fix", requested_by="ana"))
        Ledger(catalog).create(REQUEST_ID, spec, CODE_VERSION, {})
        identity = RunIdentity(
            asset=ASSET, interval=graph.calendar.interval(DAYS[0]), logical_run_id=RUN_ID, dagster_run_id=RUN_ID,
            request_id=REQUEST_ID, code_version=CODE_VERSION, params_digest=params_digest({}), lane="backfill",
            requested_at=None, started_at=iso(utc_now()),
        )
        version = catalog.begin_version(identity)
        catalog.mark_verifying(version.version_id, path=f"/warehouse/{version.version_id}/data.parquet", rows=10,
                               sha256="0" * 64, stats={"rows": 10}, input_versions={})
        catalog.publish(version.version_id, [{"name": "row_count", "passed": True}])
        db.dispose_all()
        _settle(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(path.read_bytes())
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: request {REQUEST_ID}, "
          f"{version.version_id} published")


def _settle(path: Path) -> None:
    """Everything in the one file (the WAL checkpointed away), still in WAL mode as the catalog keeps it: opening
    the copy then changes no byte of it unless something writes."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where to write it (default: {DEFAULT_OUT})")
    make(parser.parse_args(argv).out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
