"""Facts about Dagster runs that the driver and the CLI need: in-flight cells, a request's runs."""

from __future__ import annotations

from typing import Iterable, Iterator

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import days_between
from backfill_assets.engine.model.numbers import whole_number
from backfill_assets.engine.model.request_model import MAX_ACTIVE_LIMIT
from backfill_assets.engine.model.states import RunStatus
from backfill_assets.engine.plan.settling import RunView

RUN_KEY_TAG = "dagster/run_key"

IN_FLIGHT_STATUSES = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
]

def run_assets(run: dg.DagsterRun, graph: AssetGraph) -> list[str]:
    if run.tags.get(T.CHUNK_ASSETS):
        return run.tags[T.CHUNK_ASSETS].split(",")
    if run.asset_selection:
        return [k.to_user_string() for k in run.asset_selection]
    return list(graph.names)  # a whole-job run writes every asset


def run_partition_keys(run: dg.DagsterRun) -> list[str]:
    """The partitions a run writes: its partition, or every day of its partition range."""
    if run.tags.get(T.DAGSTER_PARTITION):
        return [run.tags[T.DAGSTER_PARTITION]]
    start = run.tags.get(T.DAGSTER_RANGE_START) or run.tags.get(T.CHUNK_FIRST)
    end = run.tags.get(T.DAGSTER_RANGE_END) or run.tags.get(T.CHUNK_LAST)
    if start and end:
        return days_between(start, end)
    return []


def in_flight_writes(
    instance: dg.DagsterInstance, graph: AssetGraph, partitions: Iterable[str]
) -> Iterator[tuple[str, str, dg.DagsterRun]]:
    """(asset, partition, run) for every cell of ``partitions`` that a queued or running run will write, whatever
    launched the run (a request, production, a backfill launched from Dagster).

    Reads only the runs that can write them, not every run in flight on the instance: the runs of one of these
    partitions (by Dagster's partition tag), and the multi-day runs (a range run of a backfill launched from
    Dagster, one of our chunk runs) whose first day is not after the last of ``partitions`` (by their first-day
    tag, among the first days the instance has ever seen; partition keys are ISO days, so they sort as days)."""
    wanted = sorted(set(partitions))
    if not wanted:
        return
    found: dict[str, dg.DagsterRun] = {}
    for chunk in _chunks(wanted):
        found.update((r.run_id, r) for r in _in_flight_runs(instance, {T.DAGSTER_PARTITION: chunk}))
    for first_day_tag in (T.DAGSTER_RANGE_START, T.CHUNK_FIRST):
        firsts = sorted(v for _, values in instance.get_run_tags([first_day_tag]) for v in values if v <= wanted[-1])
        for chunk in _chunks(firsts):
            found.update((r.run_id, r) for r in _in_flight_runs(instance, {first_day_tag: chunk}))
    wanted_set = set(wanted)
    for run in found.values():
        for partition in run_partition_keys(run):
            if partition in wanted_set:
                for asset in run_assets(run, graph):
                    yield asset, partition, run


def _in_flight_runs(instance: dg.DagsterInstance, tags: dict[str, list[str]]) -> list[dg.DagsterRun]:
    return list(instance.get_runs(filters=dg.RunsFilter(statuses=IN_FLIGHT_STATUSES, tags=tags)))


def _chunks(values: list[str], size: int = 500) -> Iterator[list[str]]:
    # Bounded IN lists: SQLite limits bound parameters per statement.
    for start in range(0, len(values), size):
        yield values[start : start + size]


def in_flight_cells(
    instance: dg.DagsterInstance, graph: AssetGraph, partitions: Iterable[str]
) -> dict[tuple[str, str], str]:
    """(asset, partition) → run id of a queued or running run that will write that cell, for ``partitions``."""
    return {(asset, partition): run.run_id for asset, partition, run in in_flight_writes(instance, graph, partitions)}


def other_run_writing(
    instance: dg.DagsterInstance, graph: AssetGraph, asset: str, partition: str, own: dg.DagsterRun
) -> str | None:
    """A queued or running run, other than ``own`` (or another attempt of its logical run), that will write
    the cell, or None."""
    own_root = own.root_run_id or own.run_id
    for cell_asset, _, run in in_flight_writes(instance, graph, [partition]):
        if cell_asset == asset and (run.root_run_id or run.run_id) != own_root:
            return run.run_id
    return None


def run_status(run: dg.DagsterRun) -> RunStatus:
    """The run's status as the engine's enum: parsed here, once, from Dagster's (the two share their names)."""
    return RunStatus(run.status.value)


def runs_of_request(instance: dg.DagsterInstance, request_id: str) -> list[dg.DagsterRun]:
    runs = list(instance.get_runs(filters=dg.RunsFilter(tags={T.REQUEST_ID: request_id})))
    if not request_id.startswith(T.ADOPTED_PREFIX):
        return runs
    # An adopted Dagster backfill: its own runs carry Dagster's tag (ours only once the run coordinator or their
    # first step stamps it); the driver's runs of the cells its downstream policy added carry ours.
    backfill = instance.get_runs(
        filters=dg.RunsFilter(tags={T.DAGSTER_BACKFILL: request_id.removeprefix(T.ADOPTED_PREFIX)})
    )
    return list({run.run_id: run for run in [*backfill, *runs]}.values())


def _slot(run: dg.DagsterRun) -> int | None:
    """The run's slot number, None when it has none (or a tag typed in the UI that is not ours)."""
    number = run.tags.get(T.SLOT, "").rsplit("/", 1)[-1]
    try:
        return whole_number(number, f"tag {T.SLOT}", 0, MAX_ACTIVE_LIMIT)
    except InvalidInput:
        return None


def run_view(run: dg.DagsterRun, run_key: str | None = None) -> RunView:
    return RunView(run.run_id, run_key, run.tags.get(T.DAGSTER_PARTITION), run_status(run), _slot(run))


def run_views_by_key(runs: list[dg.DagsterRun]) -> dict[str, RunView]:
    views: dict[str, RunView] = {}
    for run in sorted(runs, key=lambda r: r.run_id):
        key = run.tags.get(RUN_KEY_TAG)
        if key:
            views[key] = run_view(run, key)
    return views
