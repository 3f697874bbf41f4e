"""The admission check on a real instance: runs tagged as a backfill launched from Dagster (`dagster/backfill`,
as the UI's dialog and `dagster job backfill` tag them) keep the policy of their launch tags."""

from __future__ import annotations

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.cells import Skip, SkipKind
from backfill_assets.engine.plan.adoption import adopted_spec
from backfill_assets.engine.store.admissions import Admissions
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from tests.homes import TEST_CODE_VERSION
from tests.orders import DAILY_PARTITIONS, GRAPH, run_partitions

DAY = "2022-09-02"
# run_partitions tags production runs; a UI backfill's runs carry no lane tag of ours.
UI_BACKFILL = {T.DAGSTER_BACKFILL: "uibackfl", T.LANE: ""}


def _logs(env, run_id: str) -> str:
    return " ".join(r.user_message for r in env.instance.all_logs(run_id))


def test_a_published_cell_is_left_alone_under_reprocess_failed_and_says_why(env):
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS]))
    serving = env.catalog.current(ORDER_FACTS, DAY)
    [run] = run_partitions(env.instance, [DAY], assets=[ORDER_FACTS], tags={**UI_BACKFILL, T.REPROCESS: "failed"})
    assert run.success, run.failure
    assert [v.version_id for v in env.catalog.versions_of(ORDER_FACTS, DAY)] == [serving.version_id]
    assert "not recomputed — latest attempt PUBLISHED (backfill/reprocess=failed)" in _logs(env, run.run_id)
    assert Admissions(env.catalog).skips_of_runs([run.run_id]) == {
        (ORDER_FACTS, DAY, run.run_id): Skip("latest attempt PUBLISHED (backfill/reprocess=failed)", SkipKind.DECIDED)
    }
    # Dagster shows the day as the version serving it: reported again, not recomputed, its checks as recorded.
    [again] = [m for m in env.instance.fetch_materializations(dg.AssetKey(ORDER_FACTS), limit=10).records
               if m.run_id == run.run_id]
    metadata = {k: v.value for k, v in again.asset_materialization.metadata.items()}
    assert (metadata["version_id"], metadata["recomputed"]) == (serving.version_id, False)
    assert metadata["left_alone_because"] == "latest attempt PUBLISHED (backfill/reprocess=failed)"
    checks = env.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(dg.AssetKey(ORDER_FACTS), "row_count")]
    )
    assert checks[dg.AssetCheckKey(dg.AssetKey(ORDER_FACTS), "row_count")].run_id == run.run_id


def test_a_downstream_cell_of_the_same_run_is_decided_by_its_own_policy_not_skipped(env):
    """order_facts is left alone (published, reprocess=failed); daily_revenue, never computed, is computed in the
    same run from the version order_facts still serves, instead of being skipped by Dagster."""
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS]))
    serving = env.catalog.current(ORDER_FACTS, DAY)
    [run] = run_partitions(env.instance, [DAY], assets=[ORDER_FACTS, DAILY_REVENUE],
                           tags={**UI_BACKFILL, T.REPROCESS: "failed"})
    assert run.success, run.failure
    assert [v.version_id for v in env.catalog.versions_of(ORDER_FACTS, DAY)] == [serving.version_id]
    revenue = env.catalog.current(DAILY_REVENUE, DAY)
    assert revenue is not None and revenue.dagster_run_id == run.run_id
    assert revenue.input_versions == {f"{ORDER_FACTS}/{DAY}": serving.version_id}
    statuses = env.instance.get_status_by_partition(dg.AssetKey(DAILY_REVENUE), [DAY], DAILY_PARTITIONS)
    assert statuses[DAY] == dg.AssetPartitionStatus.MATERIALIZED


def test_without_the_tag_the_cell_is_recomputed_and_with_a_bad_value_nothing_is(env):
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS]))
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags=UI_BACKFILL)
    assert run.success and len(env.catalog.versions_of(RAW_ORDERS, DAY)) == 2
    [bad] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags={**UI_BACKFILL, T.REPROCESS: "all"})
    assert not bad.success and f"tag {T.REPROCESS}='all' is not one of none, failed, completed" in bad.failure
    # A downstream policy is never ignored: one the library does not know computes nothing either.
    [bad] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags={**UI_BACKFILL, T.DOWNSTREAM: "all"})
    assert not bad.success
    assert f"tag {T.DOWNSTREAM}='all' is not one of none, cascade, handoff, confirm" in bad.failure
    assert len(env.catalog.versions_of(RAW_ORDERS, DAY)) == 2


def test_a_side_effect_without_approval_is_left_alone_not_failed(env):
    upstream = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=upstream))
    [run] = run_partitions(env.instance, [DAY], assets=[REVENUE_ALERT], tags=UI_BACKFILL)
    assert run.success, run.failure
    assert deliveries(env.catalog, DAY, asset=REVENUE_ALERT) == []
    [(cell, skip)] = Admissions(env.catalog).skips_of_runs([run.run_id]).items()
    assert cell == (REVENUE_ALERT, DAY, run.run_id) and "side effect not authorized" in skip.reason


def test_a_ui_backfill_does_not_publish_under_code_that_changed_since_its_adoption(env):
    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS]))
    serving = env.catalog.current(RAW_ORDERS, DAY)
    # Adopted (as the adoption sensor records it) while another code version was loaded.
    spec = adopted_spec(GRAPH, ((RAW_ORDERS, DAY),), {}, "ui-user", default_max_active=2)
    Ledger(env.catalog).create(f"{T.ADOPTED_PREFIX}uibackfl", spec, "code-at-adoption", excluded={}, source="dagster")
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS], tags=UI_BACKFILL)
    assert not run.success
    latest = env.catalog.versions_of(RAW_ORDERS, DAY)[-1]
    assert latest.state == "REJECTED"
    assert latest.error == (
        f"code version changed (frozen code-at-adoption, loaded {TEST_CODE_VERSION}); refusing to publish"
    )
    assert env.catalog.current(RAW_ORDERS, DAY).version_id == serving.version_id


def test_a_launch_tag_contradicting_the_assets_declaration_computes_nothing_and_names_the_asset(env):
    """A UI backfill's `backfill/max_active` above 1 for an asset whose days run one at a time is refused by its
    step, naming the asset; without the tag, the adopted request records the declared pace."""
    from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT

    assert all(r.success for r in run_partitions(env.instance, [DAY], assets=[RAW_ORDERS, ORDER_FACTS]))
    [bad] = run_partitions(env.instance, [DAY], assets=[CUSTOMER_SNAPSHOT], tags={**UI_BACKFILL, T.MAX_ACTIVE: "4"})
    assert not bad.success
    assert f"tag {T.MAX_ACTIVE}=4 is refused: {CUSTOMER_SNAPSHOT} depends on the past" in bad.failure
    assert env.catalog.versions_of(CUSTOMER_SNAPSHOT, DAY) == []
    spec = adopted_spec(GRAPH, ((CUSTOMER_SNAPSHOT, DAY),), {}, None, default_max_active=4)
    assert (spec.max_active, spec.order, spec.serial) == (1, "forward", True)
