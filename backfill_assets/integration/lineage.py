"""The OpenLineage observer of a gated step, when the library's setting turns lineage on (docs/LINEAGE.md)."""

from __future__ import annotations

from urllib.parse import urlsplit

import dagster as dg

from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.model.settings import TableSettings
from backfill_assets.engine.wap.observer import AttemptObserver
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.step_context import StepContext


def lineage_observers(context: StepContext, backfill: BackfillResource) -> list[AttemptObserver]:
    """None when lineage is off (the default); else one observer sending to the configured target, which warns in
    the step's log when a send fails. A setting that is wrong fails the step before it writes anything."""
    try:
        target = backfill.lineage_target()
    except BackfillError as exc:
        raise dg.Failure(description=f"OpenLineage: {exc}", allow_retries=False) from exc
    if not target.enabled:
        return []
    try:
        # Only imported when on: openlineage-python is the optional extra ``backfill_assets[openlineage]``.
        from backfill_assets.lineage.emitter import OpenLineageObserver
        from backfill_assets.lineage.events import LineageNaming
    except ImportError as exc:
        raise dg.Failure(
            description=(
                f"OpenLineage is on ({target.describe()}) but openlineage-python is not installed: "
                f"pip install 'backfill_assets[openlineage]' ({exc})"
            ),
            allow_retries=False,
        ) from exc
    settings = backfill.settings()
    tables = table_names(TableSettings.from_env(settings))
    naming = LineageNaming.for_warehouse(target.namespace, context.job_name, settings.warehouse_root, tables)
    return [OpenLineageObserver(target, naming, context.log.warning)]


def table_names(tables: TableSettings) -> tuple[tuple[str, str], ...]:
    """(namespace, schema) of each published table kind, as OpenLineage names datasets: PostgreSQL
    ``postgres://host:port`` with ``database.schema``; Iceberg its catalog (the SQL catalog's database, a
    configured catalog's name) with its namespace."""
    names: list[tuple[str, str]] = []
    if "iceberg" in tables.kinds:
        catalog = f"iceberg://{tables.iceberg_catalog_name}" if tables.iceberg_catalog_name \
            else _without_password(tables.iceberg_catalog_url)
        names.append((catalog, tables.iceberg_namespace))
    if "postgres" in tables.kinds and tables.postgres_url:
        parts = urlsplit(tables.postgres_url)
        names.append((f"postgres://{parts.hostname}:{parts.port or 5432}",
                      f"{parts.path.strip('/')}.{tables.postgres_schema}"))
    return tuple(names)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", "@")
    return parts._replace(netloc=netloc).geturl()
