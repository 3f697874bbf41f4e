"""The Iceberg table is created whole: partitioned by day and mapping the version files' columns by name, in one
commit, however many processes sync an asset for the first time at once. A table made in two steps could be left
half-made by a creator that died or lost the race between them, and pyiceberg cannot read the version files (no
Iceberg field ids) from a table without the name mapping."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.iceberg_table import NAME_MAPPING, IcebergTables, TableSyncError
from tests.engine.catalog_helpers import run_racers
from tests.tables.iceberg_helpers import iceberg_settings, race_first_syncs
from tests.tables.pg_table_helpers import published

ASSET = "t_created"
RACERS = 4
ROUNDS = 3


def test_first_syncs_racing_each_create_or_find_one_whole_readable_table(tmp_path):
    catalog_url, iceberg_url = f"sqlite:///{tmp_path}/catalog.db", f"sqlite:///{tmp_path}/iceberg.db"
    catalog, warehouse = Catalog(catalog_url), Warehouse(str(tmp_path / "warehouse"))
    days = {day: published(catalog, warehouse, ASSET, day, f"run-{day}", rows=3 + i)
            for i, day in enumerate(("2022-10-01", "2022-10-02"))}
    namespaces = [f"race{n}" for n in range(ROUNDS)]
    args = (catalog_url, iceberg_url, str(warehouse.root), ASSET, namespaces)
    reports = run_racers(race_first_syncs, [args] * RACERS)
    failed = [outcome for _, outcomes in reports for outcome in outcomes if outcome[0] != "synced"]
    assert failed == [], failed
    for namespace in namespaces:
        table = IcebergTables(iceberg_settings(iceberg_url, str(warehouse.root), namespace)).load(ASSET)
        assert [f.name for f in table.spec().fields] == [DAY_COLUMN]
        assert NAME_MAPPING in table.properties
        rows = table.scan().to_arrow()
        assert rows.num_rows == sum(v.rows for v in days.values())
        assert len(table.snapshots()) == 1, "one racer's commit; the others found the table in line"


def test_a_first_published_day_without_rows_waits_for_a_day_with_rows_to_make_the_table(tmp_path):
    """A day whose source had nothing was the first day the table was made from: an empty frame's columns have no
    type (Arrow's null, which Iceberg refuses) or pandas' default float, so the table was never made or refused
    every later day with rows ("Mismatch in fields")."""
    catalog_url, iceberg_url = f"sqlite:///{tmp_path}/catalog.db", f"sqlite:///{tmp_path}/iceberg.db"
    catalog, warehouse = Catalog(catalog_url), Warehouse(str(tmp_path / "warehouse"))
    tables = IcebergTables(iceberg_settings(iceberg_url, str(warehouse.root)))
    empty = published(catalog, warehouse, ASSET, "2022-10-01", "run-empty", rows=0)
    first = tables.sync(catalog, ASSET)
    assert (first.days, tables.load(ASSET)) == ((), None)  # nothing to type the columns by yet, and no error
    assert tables.lag(catalog, ASSET).days_behind == (empty.partition_key,)
    full = published(catalog, warehouse, ASSET, "2022-10-02", "run-full", rows=3)
    second = tables.sync(catalog, ASSET)
    assert set(second.days) == {"2022-10-01", "2022-10-02"}
    rows = tables.load(ASSET).scan().to_arrow()
    assert rows.num_rows == full.rows and set(rows.column(DAY_COLUMN).to_pylist()) == {date(2022, 10, 2)}
    assert tables.lag(catalog, ASSET).in_line
    again = published(catalog, warehouse, ASSET, "2022-10-03", "run-empty-later", rows=0)
    assert tables.sync(catalog, ASSET).versions == (again.version_id,)  # a later empty day: no file, no type
    assert tables.load(ASSET).scan().to_arrow().num_rows == full.rows


def test_a_day_whose_column_has_no_value_fails_the_sync_naming_the_column_and_the_way_out(tmp_path):
    """A nullable column with no value in a day is Arrow's null type in that day's file: pyiceberg refused it with
    its own words at every sync after. The sync now says which version and column, and what to do; the table keeps
    serving what it held, and a day re-run with the column typed brings it in line."""
    catalog_url, iceberg_url = f"sqlite:///{tmp_path}/catalog.db", f"sqlite:///{tmp_path}/iceberg.db"
    catalog, warehouse = Catalog(catalog_url), Warehouse(str(tmp_path / "warehouse"))
    tables = IcebergTables(iceberg_settings(iceberg_url, str(warehouse.root)))
    published(catalog, warehouse, ASSET, "2022-10-01", "run-a", frame=pd.DataFrame({"n": [1, 2], "note": ["x", None]}))
    tables.sync(catalog, ASSET)
    untyped = published(catalog, warehouse, ASSET, "2022-10-02", "run-b",
                        frame=pd.DataFrame({"n": [3, 4], "note": [None, None]}))
    with pytest.raises(TableSyncError, match=rf"{untyped.version_id}: column 'note' has no type .*astype"):
        tables.sync(catalog, ASSET)
    assert tables.load(ASSET).scan().to_arrow().num_rows == 2
    published(catalog, warehouse, ASSET, "2022-10-02", "run-c",
              frame=pd.DataFrame({"n": [3, 4], "note": pd.Series([None, None], dtype="string")}))
    tables.sync(catalog, ASSET)
    assert tables.load(ASSET).scan().to_arrow().num_rows == 4 and tables.lag(catalog, ASSET).in_line
