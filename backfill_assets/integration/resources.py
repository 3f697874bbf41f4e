"""Where the catalog, warehouse, source and sink live, resolved at run time (never at import)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import dagster as dg

from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.published_tables import PublishedTables, published_tables_of
from backfill_assets.lineage.config import LineageTarget, lineage_target

# The resource key the library's steps and sensors use; a code location's own resources sit beside it.
BACKFILL_RESOURCE = "backfill"


class BackfillResource(dg.ConfigurableResource):
    """Where the catalog and the warehouse live; unset fields fall back to the BACKFILL_* environment."""

    warehouse_root: Optional[str] = None
    catalog_url: Optional[str] = None
    # OpenLineage events of each attempt (docs/LINEAGE.md): off, console, file:<path>, http(s)://… or openlineage
    # (OpenLineage's own config); unset falls back to BACKFILL_OPENLINEAGE, and that to off.
    openlineage: Optional[str] = None
    openlineage_namespace: Optional[str] = None
    # Write targets' quotas (``gated_asset(target=...)``): at most N steps write, audit and publish to a target at
    # once, counted in the catalog by leases that expire when their holder stops renewing them (a killed worker).
    target_limits: dict[str, int] = {}
    target_lease_seconds: float = 30.0
    # How long a step waits for a write slot before failing, so it never holds its Dagster pool slot for ever.
    target_wait_seconds: float = 600.0

    def settings(self) -> Settings:
        settings = Settings.from_env()
        return replace(settings, warehouse_root=self.warehouse_root or settings.warehouse_root,
                       catalog_url=self.catalog_url or settings.catalog_url)

    def catalog(self) -> Catalog:
        return Catalog.of_settings(self.settings())

    def warehouse(self) -> Warehouse:
        return Warehouse(self.settings().warehouse_root)

    def published_tables(self) -> PublishedTables:
        """The published tables the settings turn on (``BACKFILL_PUBLISHED_TABLES``; Iceberg by default)."""
        return published_tables_of(self.settings())

    def lineage_target(self) -> LineageTarget:
        return lineage_target(self.openlineage, self.openlineage_namespace)
