"""Engine fixtures: ``catalog`` runs a test on SQLite and on PostgreSQL (``catalog_url``, tests/conftest.py);
a module that means SQLite only defines its own."""

from __future__ import annotations

import pytest

from backfill_assets.engine.store.catalog import Catalog


@pytest.fixture
def catalog(catalog_url) -> Catalog:
    return Catalog(catalog_url)
