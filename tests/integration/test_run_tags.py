"""Every data run says which request it works for and which code computed it, whoever launched it and on any
instance (a test instance here: Dagster's own launcher and coordinator): the first gated step stamps the tags a
run lacks — a Dagster backfill's run its adopted request (``dg-<backfill id>``), and every run its code version."""

from __future__ import annotations

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import code_version
from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.integration.sensors.production import PRODUCTION_TAGS
from tests.orders import GRAPH, run_partitions

DAY = "2022-09-01"


def _tags(env, run) -> dict[str, str]:
    return dict(env.instance.get_run_by_id(run.run_id).tags)


def loaded_code_version() -> str:
    return code_version(sources=GRAPH.code_sources)


def test_a_dagster_backfills_run_is_stamped_with_its_adopted_request_and_code_version(env):
    # As Dagster's backfill daemon launches a run of the UI's dialog or of `dagster job backfill`: its tag only.
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS], tags={T.DAGSTER_BACKFILL: "abcdefgh"})
    assert run.success
    tags = _tags(env, run)
    assert (tags[T.REQUEST_ID], tags[T.CODE_VERSION]) == ("dg-abcdefgh", loaded_code_version())


def test_a_production_run_and_a_manual_run_are_stamped_with_the_code_version_only(env):
    [production] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags=dict(PRODUCTION_TAGS))
    [manual] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    for run in (production, manual):
        tags = _tags(env, run)
        assert tags[T.CODE_VERSION] == loaded_code_version() and T.REQUEST_ID not in tags, tags
    assert _tags(env, production)[T.LANE] == T.LANE_PRODUCTION


def test_a_run_that_has_its_tags_keeps_them(env):
    given = {T.REQUEST_ID: "req-20220901-00000000", T.CODE_VERSION: loaded_code_version(), T.LANE: T.LANE_BACKFILL}
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags=given)
    assert {k: _tags(env, run)[k] for k in given} == given

