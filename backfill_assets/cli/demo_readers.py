"""The demo's last step: the backfilled month read by an engine that knows nothing of backfill_assets — DuckDB over
the published Iceberg table, beside DuckDB over the warehouse folder — to show what each reader gets."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from backfill_assets.engine.model.settings import Settings, TableSettings
from backfill_assets.service import Backfills

if TYPE_CHECKING:
    from duckdb import DuckDBPyRelation

MONTH_SQL = (
    "SELECT count(DISTINCT partition_date) AS days, count(*) AS rows, round(sum({measure}), 2) AS total "
    "FROM {source} WHERE partition_date BETWEEN DATE '{first}' AND DATE '{last}'"
)


@dataclass(frozen=True)
class MonthRead:
    """One reader's answer for the month: how many days, rows and the sum of the measure."""

    days: int
    rows: int
    total: float


@dataclass(frozen=True)
class ReadersCompared:
    table: str
    published: MonthRead  # the catalog's pointers, as the library reads them
    iceberg: MonthRead  # DuckDB over the Iceberg table's scan
    folder: MonthRead  # DuckDB over every Parquet file under the asset's folder
    snippet: str

    def as_dict(self) -> dict[str, Any]:
        return {"table": self.table, "published": asdict(self.published), "iceberg": asdict(self.iceberg),
                "folder": asdict(self.folder), "snippet": self.snippet}


def compare_readers(settings: Settings, backfills: Backfills, asset: str, measure: str, first: str, last: str
                    ) -> ReadersCompared | None:
    """The month read three ways; None when the published tables are off (``BACKFILL_PUBLISHED_TABLES=none``)."""
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog

    from backfill_assets.engine.tables.iceberg_table import CATALOG_NAME  # pyarrow: only when the demo reads

    tables = TableSettings.from_env(settings)
    if "iceberg" not in tables.kinds or tables.iceberg_catalog_name:
        return None
    identifier = f"{tables.iceberg_namespace}.{asset}"
    iceberg = SqlCatalog(CATALOG_NAME, uri=tables.iceberg_catalog_url).load_table(identifier)
    connection = iceberg.scan().to_duckdb(asset)
    month = {"measure": measure, "first": first, "last": last}
    from_table = _month(connection.sql(MONTH_SQL.format(source=asset, **month)))
    folder = f"read_parquet('{settings.warehouse_root}/{asset}/**/*.parquet', union_by_name = true)"
    from_folder = _month(duckdb.sql(MONTH_SQL.format(source=folder, **month)))
    snippet = (f"SqlCatalog({CATALOG_NAME!r}, uri={tables.iceberg_catalog_url!r}).load_table({identifier!r})"
               f".scan().to_duckdb({asset!r}).sql(\"SELECT … FROM {asset}\")")
    published = _published(backfills, asset, measure, first, last)
    return ReadersCompared(identifier, published, from_table, from_folder, snippet)


def _published(backfills: Backfills, asset: str, measure: str, first: str, last: str) -> MonthRead:
    # What the pointers serve, verified; a look, not a consumer's read (the demo is no reader rollback must name).
    frames = [day.frame for day in backfills.served(asset, first, last)]
    rows = sum(len(f) for f in frames)
    total = round(float(sum(f[measure].sum() for f in frames)), 2)
    return MonthRead(len(frames), rows, total)


def _month(relation: DuckDBPyRelation | None) -> MonthRead:
    """MONTH_SQL's one row (DuckDB types ``sql`` as None for a statement that returns no relation; a SELECT
    always returns one)."""
    found = relation.fetchall() if relation is not None else []
    days, rows, total = found[0] if found else (0, 0, 0.0)
    return MonthRead(int(days or 0), int(rows or 0), float(total or 0.0))
