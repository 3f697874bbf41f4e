"""Definition-level facts: the graph, the blocking checks, the tags, the production trigger."""

import re

import dagster as dg
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.wap.audit import check_names
from backfill_assets.examples.orders.domain import DATA_ASSETS, REVENUE_ALERT
from tests.orders import DAILY_PARTITIONS as daily_partitions
from tests.orders import DEFS as defs
from tests.orders import GRAPH


def _assets_by_key():
    graph = defs.resolve_asset_graph()
    return {key.to_user_string(): graph.get(key) for key in graph.get_all_asset_keys()}


def test_every_data_asset_has_five_blocking_partitioned_checks():
    repo = defs.get_repository_def()
    for name in DATA_ASSETS:
        assets_def = repo.assets_defs_by_key[dg.AssetKey(name)]
        specs = {spec.name: spec for spec in assets_def.check_specs}
        assert list(specs) == [n for n, _ in check_names(GRAPH[name])], name
        assert len(specs) == 5, name
        assert all(spec.blocking for spec in specs.values()), name
        assert all(spec.partitions_def == daily_partitions for spec in specs.values()), name


def test_assets_are_daily_partitioned_in_shanghai_with_lineage():
    nodes = _assets_by_key()
    assert set(nodes) == set(GRAPH.names)
    assert daily_partitions.timezone == "Asia/Shanghai"
    for spec in GRAPH:
        name = spec.name
        assert nodes[name].partitions_def == daily_partitions
        assert {k.to_user_string() for k in nodes[name].parent_keys} == set(spec.upstream)


def test_side_effect_and_depends_on_past_are_tagged():
    nodes = _assets_by_key()
    assert nodes[REVENUE_ALERT].tags.get(T.SIDE_EFFECT) == "true"
    assert nodes["customer_snapshot"].tags.get(T.DEPENDS_ON_PAST) == "true"
    assert T.SIDE_EFFECT not in nodes["daily_revenue"].tags


def test_the_declared_order_and_pace_show_on_the_dagster_asset():
    nodes = _assets_by_key()
    snapshot, revenue = nodes["customer_snapshot"], nodes["daily_revenue"]
    assert (snapshot.tags[T.DAY_ORDER], snapshot.tags[T.PARALLEL_DAYS]) == ("forward", "false")
    assert (revenue.tags[T.DAY_ORDER], revenue.tags[T.PARALLEL_DAYS]) == ("any", "true")
    assert snapshot.metadata["backfill order"] == (
        "days run forward only (depends on the past), one day at a time (depends on the past); "
        "a request contradicting this is refused"
    )


def test_gated_asset_checks_its_declared_order_and_pace():
    from backfill_assets import BusinessCalendar, DayOrder, InvalidInput, gated_asset

    calendar = BusinessCalendar("UTC", "2022-01-03")

    def declare(**flags):
        return gated_asset(calendar=calendar, **flags)(lambda interval: None)

    declared = declare(name="sessions", order=DayOrder.BACKWARD, parallel_days=False).spec
    assert (declared.order, declared.parallel_days) == ("backward", False)
    for flags, message in (
        ({"order": "sideways"}, "order='sideways' is not one of any, forward, backward"),
        ({"order": "backward", "depends_on_past": True}, "order=backward contradicts it"),
        ({"parallel_days": "no"}, "parallel_days must be True or False"),
    ):
        with pytest.raises(InvalidInput, match=re.escape(message)):
            declare(name="bad", **flags)


def test_production_runs_in_the_production_lane_from_one_stopped_trigger():
    repo = defs.get_repository_def()
    job = repo.get_job("production_daily")
    assert job.tags[T.LANE] == T.LANE_PRODUCTION
    assert int(job.tags[T.DAGSTER_PRIORITY]) > T.PRIORITY_BACKFILL
    # One mechanism launches production runs: the trigger sensor (no schedule beside it), shipped stopped.
    assert repo.schedule_defs == []
    launchers = [s for s in repo.sensor_defs if "production_daily" in {t.job_name for t in s.targets}]
    assert [s.name for s in launchers] == ["production_trigger"]
    assert launchers[0].default_status == dg.DefaultSensorStatus.STOPPED
