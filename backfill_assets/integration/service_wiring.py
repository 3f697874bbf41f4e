"""Building the service (``Backfills``) for a Dagster surface: its graph, catalog and warehouse, Dagster as a
``DagsterPort`` (``dagster_port.InstancePort``), the code location's asset selection and resources. The service
declares what it needs and never imports this; every door that has Dagster builds it here."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.tables.published_tables import PublishedTables, published_tables_of
from backfill_assets.integration.dagster_port import DriveNow, InstancePort
from backfill_assets.integration.first_ticks import tick_of_definitions
from backfill_assets.integration.graphs import graph_of
from backfill_assets.integration.location_resources import Opener, given_resources, resources_opener
from backfill_assets.integration.selection import selector_of
from backfill_assets.service import Backfills
from backfill_assets.service.context import ServiceContext, os_user, settings_warehouse


def backfills_for_instance(
    definitions: Any, instance: dg.DagsterInstance, catalog: Catalog | None = None,
    source: M.RequestSource = M.RequestSource.PYTHON, user: str | None = None,
    warehouse: Warehouse | None = None, select_assets: Callable[[str], tuple[str, ...]] | None = None,
    system_user: str = "", tables: PublishedTables | None = None, resources: Mapping[str, Any] | None = None,
    first_tick: DriveNow | bool = True,
) -> Backfills:
    """The service for a code location (its ``dg.Definitions`` from ``backfill_definitions``, or its graph)
    on a Dagster instance; the catalog and warehouse are the ones the settings name (``BACKFILL_CATALOG_URL``,
    ``BACKFILL_WAREHOUSE``) unless given. ``user``: who acts when an operation names nobody (the OS user).
    ``select_assets``: how a clear's selection resolves (by default through ``definitions``, when they are
    Dagster's). ``system_user``: who the system saw act (stored beside stated names; by default ``user``).
    ``tables``: the published tables (by default the ones the settings turn on). ``resources``: the code
    location's resources, opened (a run's); by default ``definitions``' own, opened when an operation needs them
    (``register``'s audits). ``first_tick``: how ``create`` queues a request's first runs itself, as ``request
    create`` does (``runs/direct_tick.py``); by default for the module ``definitions`` were imported from (given a
    graph, none), False to leave them to the driver sensor's next pass."""
    graph = definitions if isinstance(definitions, AssetGraph) else graph_of(definitions)
    if graph is None:
        raise InvalidField("{definitions} were not built with backfill_definitions")
    selector = select_assets or (None if isinstance(definitions, AssetGraph) else selector_of(definitions, graph))
    opener: Opener | None
    if resources is not None:
        opener = given_resources(resources)
    else:
        opener = None if isinstance(definitions, AssetGraph) else resources_opener(definitions)
    return Backfills(ServiceContext(
        graph=graph,
        catalog=catalog or Catalog.of_settings(Settings.from_env()),
        dagster=InstancePort.of(instance, _first_tick(definitions, first_tick)),
        warehouse_of=lambda: warehouse or settings_warehouse(),
        source=source,
        user=user or os_user(),
        select_assets=selector,
        system_user=system_user,
        tables_of=lambda: tables or published_tables_of(Settings.from_env()),
        resources_of=opener,
    ))


def _first_tick(definitions: Any, first_tick: DriveNow | bool) -> DriveNow | None:
    if first_tick is True:
        return None if isinstance(definitions, AssetGraph) else tick_of_definitions(definitions)
    return first_tick or None


def backfills_for_home(
    graph: AssetGraph, home: Path, queue_limits: QueueLimits | None, source: M.RequestSource, user: str,
    select_assets: Callable[[str], tuple[str, ...]] | None = None, resources_of: Opener | None = None,
    drive: DriveNow | None = None,
) -> Backfills:
    """The service for a process that knows the instance by its home folder (the CLI): Dagster's instance is
    opened only by the operations that ask it something; the run queue's limits are the ones the caller read, or
    with None the ones Dagster reads from the home's dagster.yaml (the same every door states). ``drive``: a
    request's driver tick done in this process (``runs/direct_tick.DirectTick`` of the module it imported), so
    ``create`` queues its first runs itself."""
    return Backfills(ServiceContext(
        graph=graph, catalog=Catalog.of_settings(Settings.from_env()),
        dagster=InstancePort(dg.DagsterInstance.get, home, queue_limits, limits_from=f"{home}/dagster.yaml",
                             drive=drive),
        source=source, user=user,
        select_assets=select_assets, resources_of=resources_of,
    ))
