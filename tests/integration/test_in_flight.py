"""Which queued or running runs write a cell, read for the cells asked only: single-day runs by their partition tag,
a range run of a backfill launched from Dagster and one of our chunk runs by their first day, whoever made them."""

from __future__ import annotations

import uuid

import dagster as dg
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.runs.runs import in_flight_cells, other_run_writing
from tests.orders import GRAPH


@pytest.fixture
def instance(tmp_path):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        yield instance


def _run(instance, tags, status=dg.DagsterRunStatus.STARTED, assets=None, root=None) -> dg.DagsterRun:
    run = dg.DagsterRun(
        job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), status=status, tags=tags, root_run_id=root,
        parent_run_id=root, asset_selection=frozenset(dg.AssetKey(a) for a in assets) if assets else None,
    )
    instance.add_run(run)
    return run


def test_in_flight_cells_finds_single_day_range_and_chunk_runs_of_the_days_asked_only(instance):
    production = _run(instance, {T.LANE: T.LANE_PRODUCTION, T.DAGSTER_PARTITION: "2022-10-02"}, assets=[DAILY_REVENUE])
    _run(instance, {T.DAGSTER_PARTITION: "2022-10-02"}, dg.DagsterRunStatus.SUCCESS, assets=[RAW_ORDERS])
    _run(instance, {T.DAGSTER_PARTITION: "2022-11-20"}, dg.DagsterRunStatus.STARTING, assets=[RAW_ORDERS])
    ranged = _run(instance, {T.DAGSTER_BACKFILL: "abc", T.DAGSTER_RANGE_START: "2022-09-25",
                             T.DAGSTER_RANGE_END: "2022-10-03"}, dg.DagsterRunStatus.NOT_STARTED, assets=[ORDER_FACTS])
    chunk = _run(instance, {T.CHUNK_FIRST: "2022-10-03", T.CHUNK_LAST: "2022-10-05", T.CHUNK_ASSETS: RAW_ORDERS})
    _run(instance, {T.DAGSTER_RANGE_START: "2022-10-04", T.DAGSTER_RANGE_END: "2022-10-09"}, assets=[ORDER_FACTS])

    assert in_flight_cells(instance, GRAPH, ["2022-10-02", "2022-10-03"]) == {
        (DAILY_REVENUE, "2022-10-02"): production.run_id,
        (ORDER_FACTS, "2022-10-02"): ranged.run_id,
        (ORDER_FACTS, "2022-10-03"): ranged.run_id,
        (RAW_ORDERS, "2022-10-03"): chunk.run_id,
    }
    assert in_flight_cells(instance, GRAPH, []) == {}


def test_other_run_writing_sees_any_run_of_the_cell_but_the_own_logical_run(instance):
    first = _run(instance, {T.DAGSTER_BACKFILL: "abc", T.DAGSTER_RANGE_START: "2022-10-01",
                            T.DAGSTER_RANGE_END: "2022-10-05"}, dg.DagsterRunStatus.FAILURE, assets=[ORDER_FACTS])
    retry = _run(instance, {T.DAGSTER_BACKFILL: "abc", T.DAGSTER_RANGE_START: "2022-10-01",
                            T.DAGSTER_RANGE_END: "2022-10-05"}, assets=[ORDER_FACTS], root=first.run_id)

    assert other_run_writing(instance, GRAPH, ORDER_FACTS, "2022-10-03", retry) is None
    assert other_run_writing(instance, GRAPH, RAW_ORDERS, "2022-10-03", retry) is None

    chunk = _run(instance, {T.CHUNK_FIRST: "2022-10-03", T.CHUNK_LAST: "2022-10-04",
                            T.CHUNK_ASSETS: f"{ORDER_FACTS},{DAILY_REVENUE}"})
    assert other_run_writing(instance, GRAPH, ORDER_FACTS, "2022-10-03", retry) == chunk.run_id
    assert other_run_writing(instance, GRAPH, ORDER_FACTS, "2022-10-02", retry) is None
    assert other_run_writing(instance, GRAPH, ORDER_FACTS, "2022-10-03", chunk) == retry.run_id
