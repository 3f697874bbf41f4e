"""Where the catalog, warehouse, source and sink live, resolved at run time (never at import)."""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import dagster as dg

from backfill_assets.core.catalog import Catalog
from backfill_assets.core.settings import Settings
from backfill_assets.core.source import SourceSystem
from backfill_assets.core.storage import Warehouse


class BackfillResource(dg.ConfigurableResource):
    """Catalog, warehouse and source settings; unset fields fall back to the BACKFILL_* environment."""

    warehouse_root: Optional[str] = None
    catalog_url: Optional[str] = None
    source_url: Optional[str] = None
    sink_path: Optional[str] = None

    def settings(self) -> Settings:
        overrides = {
            "warehouse_root": self.warehouse_root,
            "catalog_url": self.catalog_url,
            "source_url": self.source_url,
            "sink_path": self.sink_path,
        }
        overrides = {k: v for k, v in overrides.items() if v}
        if len(overrides) == 4:
            return Settings(dagster_home=None, **overrides)  # type: ignore[arg-type]
        return replace(Settings.from_env(), **overrides)

    def catalog(self) -> Catalog:
        return Catalog(self.settings().catalog_url)

    def warehouse(self) -> Warehouse:
        return Warehouse(self.settings().warehouse_root)

    def source(self) -> SourceSystem:
        return SourceSystem(self.settings().source_url)
