"""The public API: declare gated assets with decorators, get a whole code location from ``backfill_definitions``.

```python
calendar = BusinessCalendar("America/New_York", "2023-01-01")

@gated_asset(calendar=calendar, deps=["page_views"], audits=[unique_key("visit_id"), not_empty()])
def visits(interval, page_views: pd.DataFrame) -> pd.DataFrame: ...

defs = backfill_definitions(assets=[page_views, visits], resources={"clickstream": Clickstream()})
```

A decorator returns a declaration (``BackfillAsset``), not yet a Dagster asset: the definitions builder sees the
whole graph first (lineage, batchable assets, calendar), then builds the gated assets with one blocking check per
audit, the jobs, the driver / propagation / adoption sensors and the production trigger around it.
"""

from __future__ import annotations

import sys
from datetime import date, datetime
from typing import Any, Callable, Iterable, Mapping

import dagster as dg

from backfill_assets.engine.model.access import AccessPolicy, CleanupPolicy
from backfill_assets.engine.model.code_inputs import CodeInputs
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.gates import validate_target_limits, validate_target_timing
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import validate_location
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.catchup import CatchupSettings
from backfill_assets.engine.store.orm_import import import_the_orm_whole
from backfill_assets.integration.assets.chunks import build_chunk_job
from backfill_assets.integration.assets.gated import build_gated_asset
from backfill_assets.integration.assets.side_effects import build_side_effect_asset
from backfill_assets.integration.declarations import BackfillAsset
from backfill_assets.integration.graphs import register_graph
from backfill_assets.integration.jobs import build_backfill_job, build_production_job
from backfill_assets.integration.operation_jobs import build_operation_jobs
from backfill_assets.integration.ordinary_assets import not_ours
from backfill_assets.integration.published_io import PUBLISHED_IO_MANAGER, PublishedDataIOManager
from backfill_assets.integration.request_jobs import build_clear_job, build_report_job, build_request_job
from backfill_assets.integration.resources import BACKFILL_RESOURCE, BackfillResource
from backfill_assets.integration.runs.dagster_adapter import sleep_while_waiting_for_pool_slots
from backfill_assets.integration.runs.run_end_tick import ticking_executor
from backfill_assets.integration.sensors.adoption import build_adoption_sensor
from backfill_assets.integration.sensors.cleanup import build_gc_sensor
from backfill_assets.integration.sensors.driver import build_driver_sensor
from backfill_assets.integration.sensors.production import build_production_sensor
from backfill_assets.integration.sensors.propagation import build_propagation_sensor
from backfill_assets.integration.sensors.published_tables import build_tables_sensor


def backfill_definitions(
    *,
    assets: Iterable[BackfillAsset],
    resources: Mapping[str, Any] | None = None,
    backfill: BackfillResource | None = None,
    executor: dg.ExecutorDefinition | None = None,
    catchup: bool = True,
    production_start: str | date | None = None,
    clock: Callable[[], datetime] | None = None,
    access: AccessPolicy | None = None,
    cleanup: CleanupPolicy | None = None,
    location: str | None = None,
    code_inputs: CodeInputs | None = None,
) -> dg.Definitions:
    """The code location: gated assets and their blocking checks, the production and backfill jobs, the batched
    (chunk) job, the Launchpad's backfill_request and backfill_report jobs, the production trigger, and the
    backfill driver, propagation and adoption sensors.

    ``executor`` runs the data steps (production, backfill and chunk runs), by default inside the run's own
    process; e.g. ``dagster_celery.celery_executor`` spreads them over Celery workers (deploy/celery). The
    Launchpad's request and report jobs always run in the run's process: they only talk to the catalog.

    Production (the ``production_trigger`` sensor, shipped stopped) runs each complete business day once. After
    downtime, ``catchup=True`` (the default: a missed day is production's to compute, not an operator's chore)
    submits every missed day in order; ``catchup=False`` only the newest, the gap being a request's job. Its first
    start runs the newest day only, or, with ``catchup``, every day from ``production_start`` (Airflow's
    ``start_date``; no day before it is ever run by production). ``clock`` is the trigger's "now" (tests).

    ``access`` (``AccessPolicy(approvers=[...], admins=[...])``) says who may approve side effects and overrides
    and who besides an asset's owners may decide its handoffs; ``cleanup`` (``CleanupPolicy(retention_days=...)``)
    how long the ``backfill_cleanup`` sensor (shipped stopped) keeps non-current versions' files. Both live here, in the
    code location, so every door that loads it (CLI, webserver, daemon) checks the same lists.

    ``location`` names the code location on a catalog several share (by default the top-level package of the module
    calling ``backfill_definitions``, e.g. ``my_meters``): the first version it writes of an asset claims the name,
    and another location declaring the same name is refused before it writes (``AssetOwnedElsewhere``).

    ``code_inputs`` (``CodeInputs(paths=[...], distributions=[...], ignore_paths=[...], ignore_distributions=[...])``)
    adds to, or leaves out of, what the code version covers besides what is found on its own (docs/ASSETS.md).
    """
    import_the_orm_whole()  # on the thread loading the code location, before a sensor's or a lease's thread runs
    declared = list(assets)
    graph = asset_graph(declared, _policy(access, AccessPolicy, "access"), _policy(cleanup, CleanupPolicy, "cleanup"),
                        location=validate_location(location if location is not None else _calling_module()),
                        code_inputs=_policy(code_inputs, CodeInputs, "code_inputs"))
    config_classes = {item.name: item.config_class for item in declared if item.config_class is not None}
    if clock is not None and not callable(clock):
        raise InvalidInput(f"clock must be a callable returning the current time, not {type(clock).__name__}")
    backfill = backfill or BackfillResource()
    clock = clock or utc_now
    production_job, backfill_job = build_production_job(graph.names), build_backfill_job(graph.names)
    production_sensor = build_production_sensor(graph, CatchupSettings(catchup, production_start), production_job,
                                                clock, backfill)
    resources = _checked_resources(graph, dict(resources or {}), backfill)
    built = [
        build_side_effect_asset(spec, graph, clock)
        if spec.side_effect
        else build_gated_asset(spec, graph, config_classes.get(spec.name))
        for spec in graph
    ]
    # A request's run ticks its driver when it ends: the next day of a chain need not wait for the sensor's pass.
    executor = ticking_executor(_data_executor(executor), graph, backfill)
    chunk_job = build_chunk_job(graph, executor, config_classes)
    request_job, report_job = build_request_job(graph), build_report_job(graph)
    chunk_job, report_job = _with_resources([chunk_job, report_job], {BACKFILL_RESOURCE: backfill, **resources})
    defs = dg.Definitions(
        assets=built,
        jobs=[production_job, backfill_job, chunk_job, request_job, build_clear_job(graph, built), report_job,
              *build_operation_jobs(graph)],
        sensors=[production_sensor, *_library_sensors(graph, backfill_job, chunk_job, report_job, backfill)],
        resources={BACKFILL_RESOURCE: backfill, PUBLISHED_IO_MANAGER: PublishedDataIOManager(graph, backfill),
                   **resources},
        executor=executor,
    )
    register_graph(built, graph)
    # Every chunk run starts in its root asset's pool: a step waiting there must not spin a core (pool_waits.py).
    sleep_while_waiting_for_pool_slots()
    return defs


def _library_sensors(
    graph: AssetGraph, backfill_job: dg.JobDefinition, chunk_job: dg.JobDefinition, report_job: dg.JobDefinition,
    backfill: BackfillResource,
) -> list[dg.SensorDefinition]:
    """The driver (submitting backfill, chunk and report runs), propagation, adoption (report runs), gc and
    published-table sensors."""
    return [
        build_driver_sensor(graph, [backfill_job, chunk_job, report_job], backfill),
        build_propagation_sensor(graph, backfill),
        build_adoption_sensor(graph, report_job, backfill),
        build_gc_sensor(graph, backfill),
        build_tables_sensor(graph, backfill),
    ]


def _data_executor(executor: Any) -> dg.ExecutorDefinition:
    # Steps run inside the run's own process unless told otherwise: a run is a handful of small steps in dependency
    # order, and a fresh Python process per step (~3 s of start-up each on 2 cores) was most of a backfill's time.
    if executor is not None and not isinstance(executor, dg.ExecutorDefinition):
        raise InvalidInput(f"executor must be a Dagster ExecutorDefinition (e.g. dagster_celery.celery_executor), "
                           f"not {type(executor).__name__}")
    return executor or dg.in_process_executor


def _with_resources(jobs: list[dg.JobDefinition], resources: dict[str, Any]) -> list[dg.JobDefinition]:
    """The jobs with the code location's resources bound, as ``Definitions`` binds them. Bound here because
    ``Definitions`` binds a job that a sensor targets by copying the sensor too, and that copy warns (a
    ``BetaWarning`` about ``owners``, which no sensor of ours sets) in every user's own test run."""
    bound = dg.Definitions(jobs=jobs, resources=resources)
    return [bound.resolve_job_def(job.name) for job in jobs]


def _checked_resources(graph: AssetGraph, resources: dict[str, Any], backfill: BackfillResource) -> dict[str, Any]:
    """The code location's own resources, every one a callable asks for among them; the write targets' limits."""
    if BACKFILL_RESOURCE in resources:
        raise InvalidInput(f"resource key {BACKFILL_RESOURCE!r} is the library's own; pass it as backfill=")
    if PUBLISHED_IO_MANAGER in resources:
        raise InvalidInput(f"resource key {PUBLISHED_IO_MANAGER!r} is the library's own (the IO manager ordinary "
                           "assets read published days through)")
    missing = sorted({r for spec in graph for r in spec.resources} - set(resources))
    if missing:
        users = {r: [s.name for s in graph if r in s.resources] for r in missing}
        raise InvalidInput(
            "parameters that are neither `interval`, `previous`, an upstream asset nor a resource: "
            + "; ".join(f"{r} (asked by {', '.join(users[r])})" for r in missing)
        )
    validate_target_limits(backfill.target_limits, {s.name: s.target for s in graph if s.target})
    validate_target_timing(backfill.target_lease_seconds, backfill.target_wait_seconds)
    return resources


def _policy(value: Any, kind: type, name: str) -> Any:
    if value is not None and not isinstance(value, kind):
        raise InvalidInput(f"{name} must be a {kind.__name__}, not {type(value).__name__}")
    return value


def _calling_module() -> str:
    """The top-level package of the module that called ``backfill_definitions`` (``my_meters`` for
    ``my_meters.definitions``): the project, which stays the same when its modules are reorganised."""
    frame = sys._getframe(2)  # noqa: SLF001 - the caller's module name; inspect.stack() would read every source file
    name = str(frame.f_globals.get("__name__", ""))
    return "" if name == "__main__" else name.split(".")[0]


def asset_graph(
    assets: Iterable[BackfillAsset], access: AccessPolicy | None = None, cleanup: CleanupPolicy | None = None,
    location: str = "", code_inputs: CodeInputs | None = None,
) -> AssetGraph:
    declared = list(assets)
    if not declared:
        raise InvalidInput("backfill_definitions needs at least one asset")
    for item in declared:
        if not isinstance(item, BackfillAsset):
            raise InvalidInput(not_ours(item))
    calendars = {item.calendar for item in declared}
    if len(calendars) > 1:
        raise InvalidInput("every asset of one code location must share one BusinessCalendar: "
                           + ", ".join(f"{c.tz_name} from {c.first_day}" for c in calendars)
                           + "; assets of another timezone go in a second code location (their own "
                           "backfill_definitions in their own module, listed in workspace.yaml)")
    gated = {item.name for item in declared}
    for item in declared:
        for key in set(item.spec.external_upstream) & gated:
            # As an AssetKey the dependency would be ordering-only and unversioned: name it as the gated asset it is.
            raise InvalidInput(f"{item.name}: deps names {key} by its AssetKey, but it is a gated asset of this code "
                               f"location; name it by its object or as deps=[{key!r}] so its published day is read "
                               "and recorded")
    return AssetGraph(declared[0].calendar, [item.spec for item in declared], access, cleanup, location, code_inputs)
