"""The catalog's schema version, and its upgrade (``backfill-assets catalog version`` / ``catalog upgrade``).

Unlike the other operations these need no code location: a catalog is upgraded before a new release's daemon,
code server and steps open it (each refuses one not at its schema version, naming the upgrade command).

    from backfill_assets.service.catalog_schema import catalog_schema, upgrade_catalog_schema

    upgrade_catalog_schema()                                   # the catalog the settings name
    catalog_schema("postgresql://…/backfill_catalog").needs_upgrade
"""

from __future__ import annotations

from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.catalog_upgrade import SchemaStatus, SchemaUpgrade, schema_status, upgrade_catalog

__all__ = ["SchemaStatus", "SchemaUpgrade", "catalog_schema", "upgrade_catalog_schema"]


def catalog_schema(catalog_url: str | None = None) -> SchemaStatus:
    """The catalog's schema version against this code's (``BACKFILL_CATALOG_URL``, else the Dagster home's
    catalog.db, unless a URL is given); reads only."""
    return schema_status(catalog_url or Settings.from_env().catalog_url)


def upgrade_catalog_schema(catalog_url: str | None = None) -> SchemaUpgrade:
    """Bring the catalog to this code's schema version (idempotent; see ``catalog_upgrade.upgrade_catalog``)."""
    return upgrade_catalog(catalog_url or Settings.from_env().catalog_url)
