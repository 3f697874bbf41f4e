"""A table's position read from the SQL catalog's row and its metadata file (what ``reconcile`` and ``tables``
read, without importing pyiceberg) is what pyiceberg's load of the table says, in each state a table passes through;
reading it creates and changes nothing. (The published-table faults compare the two after every trial, on SQLite
and PostgreSQL catalogs.)"""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.iceberg_catalog_rows import current_metadata_location
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.iceberg_position import seq_in_metadata
from backfill_assets.engine.tables.iceberg_table import CATALOG_NAME, SEQ_PROPERTY, IcebergTables, table_seq
from tests.tables.iceberg_helpers import iceberg_settings
from tests.tables.pg_table_helpers import published

ASSET = "position_probe"
D1, D2 = "2022-10-01", "2022-10-02"


@pytest.fixture
def setup(tmp_path):
    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    # A folder name a URI would misread ("#", "%"): SQLite's read-only open takes a URI.
    iceberg_file = tmp_path / "odd # name 100%" / "iceberg_catalog.db"
    iceberg_file.parent.mkdir()
    tables = IcebergTables(iceberg_settings(f"sqlite:///{iceberg_file}", str(warehouse.root)))
    return catalog, warehouse, tables, iceberg_file


def without_pyiceberg(tables: IcebergTables) -> int:
    """The position as ``position`` reads it first, never falling back to pyiceberg (which would hide a miss)."""
    settings = tables.settings
    location = current_metadata_location(settings.iceberg_catalog_url, CATALOG_NAME, tables.namespace, ASSET)
    return 0 if location is None else seq_in_metadata(location, SEQ_PROPERTY)


def by_pyiceberg(tables: IcebergTables) -> int:
    table = tables.load(ASSET)
    return table_seq(table) if table is not None else 0


def test_the_position_read_without_pyiceberg_is_pyicebergs_in_every_state(setup):
    catalog, warehouse, tables, iceberg_file = setup
    assert tables.position(ASSET) == 0
    assert not iceberg_file.exists(), "reading a position created the Iceberg catalog"

    published(catalog, warehouse, ASSET, D1, "run-1")
    published(catalog, warehouse, ASSET, D2, "run-1")
    first = tables.sync(catalog, ASSET).seq
    assert tables.position(ASSET) == without_pyiceberg(tables) == by_pyiceberg(tables) == first > 0

    published(catalog, warehouse, ASSET, D1, "run-2")  # a republished day: a later position
    second = tables.sync(catalog, ASSET).seq
    assert tables.position(ASSET) == without_pyiceberg(tables) == by_pyiceberg(tables) == second > first

    # A snapshot someone else made (no position in its summary): its nearest ancestor's position.
    table = tables.load(ASSET)
    table.append(table.scan().to_arrow().slice(0, 1))
    assert tables.position(ASSET) == without_pyiceberg(tables) == by_pyiceberg(tables) == second

    # The table committed by another writer (Java's, which can gzip its metadata files): its row names a
    # ``.gz.metadata.json``.
    published(catalog, warehouse, ASSET, D2, "run-3")
    third = tables.sync(catalog, ASSET).seq
    plain = Path(tables.load(ASSET).metadata_location)
    zipped = plain.with_name(plain.name.removesuffix(".metadata.json") + ".gz.metadata.json")
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    with sqlite3.connect(iceberg_file) as conn:
        conn.execute("UPDATE iceberg_tables SET metadata_location = ? WHERE metadata_location = ?",
                     (str(zipped), str(plain)))
    plain.unlink()
    assert tables.position(ASSET) == without_pyiceberg(tables) == by_pyiceberg(tables) == third > second
    assert not tables.lag(catalog, ASSET).days_behind


def test_an_unsynced_table_and_an_empty_catalog_are_at_position_zero(setup):
    catalog, warehouse, tables, iceberg_file = setup
    published(catalog, warehouse, ASSET, D1, "run-1")
    iceberg_file.touch()  # a catalog file without pyiceberg's tables yet: pyiceberg answers
    assert tables.position(ASSET) == 0
    lag = tables.lag(catalog, ASSET)
    assert lag.days_behind == (D1,) and lag.seq == 0


def test_reading_a_position_imports_no_pyiceberg(setup):
    catalog, warehouse, tables, iceberg_file = setup
    published(catalog, warehouse, ASSET, D1, "run-1")
    seq = tables.sync(catalog, ASSET).seq
    settings = tables.settings
    probe = (
        "import json, sys\n"
        "from backfill_assets.engine.tables.iceberg_table import IcebergTables\n"
        "from tests.tables.iceberg_helpers import iceberg_settings\n"
        f"tables = IcebergTables(iceberg_settings({settings.iceberg_catalog_url!r}, {settings.warehouse_root!r}))\n"
        f"seq = tables.position({ASSET!r})\n"
        "print(json.dumps([seq, sorted(m for m in sys.modules if m.startswith('pyiceberg'))]))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [seq, []]


SYNC_PROBE = (
    "import json, sys\n"
    "from backfill_assets.engine.store.catalog import Catalog\n"
    "from backfill_assets.engine.tables.iceberg_table import IcebergTables\n"
    "from tests.tables.iceberg_helpers import iceberg_settings\n"
    "url, root, catalog_url, asset = sys.argv[1:]\n"
    "result = IcebergTables(iceberg_settings(url, root)).sync(Catalog(catalog_url), asset)\n"
    "print(json.dumps([result.seq, list(result.days), 'pyiceberg' in sys.modules]))\n"
)


def _sync_in_a_fresh_process(tables: IcebergTables, catalog_url: str, asset: str) -> tuple[int, list[str], bool]:
    settings = tables.settings
    done = subprocess.run(
        [sys.executable, "-c", SYNC_PROBE, settings.iceberg_catalog_url, settings.warehouse_root, catalog_url, asset],
        capture_output=True, text=True, check=True)
    return tuple(json.loads(done.stdout))


def test_a_sync_with_nothing_to_apply_imports_no_pyiceberg_and_one_with_days_applies_them(setup):
    """The daemon's sensor syncs every table every 30 s: in line (or nothing published yet), it costs no pyiceberg
    import in the code server; a day published since is applied as ever."""
    catalog, warehouse, tables, iceberg_file = setup
    catalog_url = catalog.url
    assert _sync_in_a_fresh_process(tables, catalog_url, ASSET) == (0, [], False)  # nothing published
    assert not iceberg_file.exists()

    published(catalog, warehouse, ASSET, D1, "run-1")
    seq = tables.sync(catalog, ASSET).seq
    assert _sync_in_a_fresh_process(tables, catalog_url, ASSET) == (seq, [], False)  # in line

    published(catalog, warehouse, ASSET, D2, "run-1")
    later, days, imported = _sync_in_a_fresh_process(tables, catalog_url, ASSET)
    assert (days, imported) == ([D2], True) and later > seq
    assert tables.position(ASSET) == by_pyiceberg(tables) == later
    assert _sync_in_a_fresh_process(tables, catalog_url, ASSET) == (later, [], False)
