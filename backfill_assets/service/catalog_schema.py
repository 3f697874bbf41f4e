"""The catalog's schema version, and its upgrade (``backfill-assets catalog version`` / ``catalog upgrade``).

Unlike the other operations these need no code location: a catalog is upgraded before a new release's daemon,
code server and steps open it (each refuses one not at its schema version, naming the upgrade command).

    from backfill_assets.service.catalog_schema import catalog_schema, upgrade_catalog_schema

    upgrade_catalog_schema()                                   # the catalog the settings name
    catalog_schema("postgresql://…/backfill_catalog").needs_upgrade
"""

from __future__ import annotations

from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.catalog_upgrade import (
    SchemaStatus,
    SchemaUpgrade,
    init_catalog,
    schema_status,
    upgrade_catalog,
)
from backfill_assets.engine.store.schema_version import SchemaStanding

__all__ = [
    "SchemaStanding", "SchemaStatus", "SchemaUpgrade", "catalog_schema", "init_catalog_schema",
    "upgrade_catalog_schema",
]


def catalog_schema(catalog_url: str | None = None) -> SchemaStatus:
    """The catalog's schema version against this code's (``BACKFILL_CATALOG_URL``, else the Dagster home's
    catalog.db, unless a URL is given); reads only. Without a URL, the settings' warehouse is the one beside it."""
    return schema_status(*_catalog_and_warehouse(catalog_url))


def upgrade_catalog_schema(catalog_url: str | None = None) -> SchemaUpgrade:
    """Bring the catalog to this code's schema version (idempotent; see ``catalog_upgrade.upgrade_catalog``)."""
    return upgrade_catalog(*_catalog_and_warehouse(catalog_url))


def init_catalog_schema(catalog_url: str | None = None, force: bool = False) -> SchemaUpgrade:
    """Create an empty or missing catalog at this code's schema version; ``force`` beside a warehouse that holds
    versions (starting over; see ``catalog_upgrade.init_catalog``)."""
    return init_catalog(*_catalog_and_warehouse(catalog_url), force=force)


def _catalog_and_warehouse(catalog_url: str | None) -> tuple[str, str | None]:
    if catalog_url:
        return catalog_url, None
    settings = Settings.from_env()
    return settings.catalog_url, settings.warehouse_root
