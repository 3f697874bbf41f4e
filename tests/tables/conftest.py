"""Fixtures of the PostgreSQL published table's tests: their own database, a warehouse, a catalog elsewhere (SQLite)
or on the tables' own database."""

from __future__ import annotations

import pytest

from backfill_assets.engine.store import pg_tables
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from tests.conftest import fresh_pg_database
from tests.tables.pg_table_helpers import table_settings


@pytest.fixture(scope="module")
def pg_url(pg_server):
    """The test module's own database: the tables' (and, for the same-database tests, the catalog's)."""
    with fresh_pg_database(pg_server) as url:
        yield url
        pg_tables.dispose_engines()


@pytest.fixture
def warehouse(tmp_path) -> Warehouse:
    return Warehouse(str(tmp_path / "warehouse"))


@pytest.fixture
def sqlite_catalog(tmp_path) -> Catalog:
    """A catalog on another database than the tables: the table follows it by syncing."""
    return Catalog(f"sqlite:///{tmp_path}/catalog.db")


@pytest.fixture
def tables(pg_url, warehouse):
    from backfill_assets.engine.tables.postgres_table import PostgresTables

    return PostgresTables(table_settings(pg_url, str(warehouse.root)))


@pytest.fixture
def pg_catalog(pg_url, tables) -> Catalog:
    """The catalog on the tables' own database, its publishes and rollbacks switching the table's day."""
    catalog = Catalog(pg_url)
    assert tables.join_publishes(catalog)
    return catalog
