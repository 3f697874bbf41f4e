"""What Dagster (and the UI's GraphQL) shows of each version: a check result is attached to the version it judged and
never to another; a rejected day is Failed, a published day Materialized, a rolled-back day names the version now
serving; so Dagster's Failed / Missing selection is what ``--reprocess failed`` would re-run.

The single-partition path, a Dagster partition-range run and a chunk run each report their events differently
(``AssetCheckResult`` / evaluations yielded by a multi-day step / an op job); each is pinned here."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
from click.testing import CliRunner
from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

from backfill_assets.cli import cli
from backfill_assets.engine.plan.planning import CREATE, decide
from backfill_assets.engine.wap.audit import CHECK_BUSINESS_TOTALS, CHECK_PRIMARY_KEY, CHECK_ROW_COUNT
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from backfill_assets.examples.orders.source import SourceSystem
from backfill_assets.integration.sensors.driver import cell_facts_source
from tests.instance_env import ORDERS_PER_DAY
from tests.orders import CALENDAR, DAILY_PARTITIONS, GRAPH, run_chunk, run_partitions
from tests.specs import spec_of

PUBLISHED, TWICE, REJECTED_ONLY = "2022-10-16", "2022-10-17", "2022-10-18"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
WORKSPACE = Path(__file__).resolve().parents[2] / "workspace.yaml"
DROP_ROWS = {"ops": {DAILY_REVENUE: {"config": {"defect": "drop_rows"}}}}


def _meta(entry_metadata) -> dict:
    return {k: v.value for k, v in entry_metadata.items()}


def _materializations(instance: dg.DagsterInstance, asset: str, day: str) -> list:
    """Newest first."""
    filter_ = dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day])
    return list(instance.fetch_materializations(filter_, limit=20).records)


def _evaluations(instance: dg.DagsterInstance, asset: str, check: str, day: str) -> list:
    """(run id, status, AssetCheckEvaluation) of one day's executions of a check, newest first."""
    history = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(asset), check), limit=200
    )
    return [
        (h.run_id, h.status.value, h.event.dagster_event.asset_check_evaluation_data)
        for h in history
        if h.partition == day and h.event is not None
    ]


def _storage_id_of(instance: dg.DagsterInstance, asset: str, day: str, version_id: str) -> int:
    [record] = [r for r in _materializations(instance, asset, day)
                if r.asset_materialization.metadata["version_id"].value == version_id
                and "rolled_back_from" not in r.asset_materialization.metadata]
    return record.storage_id


def _statuses(instance: dg.DagsterInstance, asset: str, days: list[str]) -> dict[str, str | None]:
    found = instance.get_status_by_partition(dg.AssetKey(asset), days, DAILY_PARTITIONS) or {}
    return {d: (found[d].value if found.get(d) else None) for d in days}


def _failed_policy_reruns(env, asset: str, days: list[str]) -> set[str]:
    """The days ``--reprocess failed`` would re-run, decided on the driver's own facts."""
    spec = spec_of(GRAPH, "2022-11-30", assets=asset, first=days[0], last=days[-1], reprocess="failed")
    facts = cell_facts_source(GRAPH, env.catalog, env.instance, [(asset, d) for d in days])
    return {d for d in days if decide(spec, GRAPH[asset], facts(asset, d)).action == CREATE}


def _assert_buttons_select_what_failed_reruns(env, asset: str, days: list[str]) -> None:
    """The dialog's Failed / Missing buttons (and "Backfill only failed and missing partitions") select by Dagster's
    status; they select exactly the days ``--reprocess failed`` would re-run."""
    statuses = _statuses(env.instance, asset, days)
    assert {d for d, s in statuses.items() if s in ("FAILED", None)} == _failed_policy_reruns(env, asset, days)


def _rollback(day: str) -> dict:
    result = CliRunner().invoke(cli, ["rollback", DAILY_REVENUE, day, "--reason", "wrong FX rates", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _assert_judged_its_own_version(env, asset: str, day: str, checks: list[str]) -> None:
    """Each execution of these checks on the day targets the materialization of the version its metadata names, or
    none when that version was rejected (it has no materialization) and then says which version still serves."""
    for check in checks:
        for run_id, status, evaluation in _evaluations(env.instance, asset, check, day):
            meta = _meta(evaluation.metadata)
            judged = env.catalog.get(meta["version_id"])
            if judged.state == "REJECTED":
                assert status == "FAILED" or check not in judged.error, (check, day)
                assert evaluation.target_materialization_data is None, (check, day, run_id)
                assert meta["state"] == "rejected" and "unpublished" in evaluation.description
                assert meta["serving_version_id"] == (env.catalog.current(asset, day).version_id
                                                      if env.catalog.current(asset, day) else
                                                      "none (no version published yet)")
                assert meta["target_materialization"].startswith("none: the judged version was rejected")
            else:
                assert status == "SUCCEEDED", (check, day, run_id)
                target = evaluation.target_materialization_data
                assert target is not None, (check, day, run_id)
                assert target.storage_id == _storage_id_of(env.instance, asset, day, judged.version_id)


def test_single_partition_runs_the_rejected_version_is_shown_as_rejected_and_the_day_failed(env):
    SourceSystem(env.settings.source_url).seed(CALENDAR, PUBLISHED, REJECTED_ONLY, ORDERS_PER_DAY)
    assert all(r.success for r in run_partitions(env.instance, [PUBLISHED, TWICE], assets=PIPELINE))
    assert all(r.success for r in run_partitions(env.instance, [REJECTED_ONLY], assets=[RAW_ORDERS, ORDER_FACTS]))
    assert all(r.success for r in run_partitions(env.instance, [PUBLISHED, TWICE], assets=[DAILY_REVENUE]))
    first, serving = (v.version_id for v in env.catalog.versions_of(DAILY_REVENUE, TWICE))
    bad = run_partitions(env.instance, [TWICE, REJECTED_ONLY], assets=[DAILY_REVENUE],
                         run_config_for={TWICE: DROP_ROWS, REJECTED_ONLY: DROP_ROWS})
    assert not any(r.success for r in bad)
    rejected = f"{DAILY_REVENUE}/{TWICE}/{bad[0].run_id}/1"
    assert env.catalog.get(rejected).state == "REJECTED"
    assert env.catalog.current(DAILY_REVENUE, TWICE).version_id == serving

    # The failed business_totals result of the rejected version does not target the serving materialization.
    [(run_id, status, evaluation), *_] = _evaluations(env.instance, DAILY_REVENUE, CHECK_BUSINESS_TOTALS, TWICE)
    assert (run_id, status) == (bad[0].run_id, "FAILED")
    assert evaluation.target_materialization_data is None
    meta = _meta(evaluation.metadata)
    assert (meta["version_id"], meta["state"], meta["serving_version_id"]) == (rejected, "rejected", serving)
    assert f"judged unpublished version {rejected}" in evaluation.description and serving in evaluation.description
    for day in (PUBLISHED, TWICE, REJECTED_ONLY):
        _assert_judged_its_own_version(env, DAILY_REVENUE, day, [CHECK_ROW_COUNT, CHECK_BUSINESS_TOTALS])

    # The partition page: the serving version's materialization, then the rejected version as an observation.
    [latest, *_] = _materializations(env.instance, DAILY_REVENUE, TWICE)
    latest_meta = _meta(latest.asset_materialization.metadata)
    assert (latest_meta["version_id"], latest_meta["state"], latest_meta["serving_version_id"]) == (
        serving, "serving", serving)
    assert {r["check"]: r["passed"] for r in
            (rec.data for rec in latest.asset_materialization.metadata["checks"].value.records)}[
        CHECK_BUSINESS_TOTALS] is True
    [observation] = env.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(DAILY_REVENUE), asset_partitions=[TWICE]), limit=5
    ).records
    seen = _meta(observation.asset_observation.metadata)
    assert (seen["rejected_version_id"], seen["serving_version_id"]) == (rejected, serving)
    # Its entries never shadow the serving materialization's on the partition page.
    assert "version_id" not in seen and "state" not in seen
    assert "business_totals" in seen["failed_checks"] and observation.run_id == bad[0].run_id

    # Dagster's status is the catalog's: rejected days Failed, the published day Materialized — the Failed / Missing
    # buttons select exactly what --reprocess failed re-runs.
    days = [PUBLISHED, TWICE, REJECTED_ONLY]
    assert _statuses(env.instance, DAILY_REVENUE, days) == {
        PUBLISHED: "MATERIALIZED", TWICE: "FAILED", REJECTED_ONLY: "FAILED"}
    _assert_buttons_select_what_failed_reruns(env, DAILY_REVENUE, days)

    # Rollback moves the pointer without a run: the day's latest materialization names the version now serving.
    [older, newer] = (v.version_id for v in env.catalog.versions_of(DAILY_REVENUE, PUBLISHED))
    rolled = _rollback(PUBLISHED)
    assert rolled["serving"] == older and rolled["dagster_event"] == f"recorded a runless materialization of {older}"
    [latest, *_] = _materializations(env.instance, DAILY_REVENUE, PUBLISHED)
    latest_meta = _meta(latest.asset_materialization.metadata)
    assert (latest_meta["version_id"], latest_meta["state"], latest_meta["rolled_back_from"]) == (
        older, "serving", newer)
    assert latest_meta["rollback_reason"] == "wrong FX rates" and latest.run_id == ""
    assert f"rolled back from {newer}" in latest.asset_materialization.description
    # A rolled-back day whose newest attempt was rejected stays Failed (an observation, not a materialization).
    assert _rollback(TWICE)["dagster_event"] == f"recorded a runless observation of {first}"
    assert _materializations(env.instance, DAILY_REVENUE, TWICE)[0].storage_id == _storage_id_of(
        env.instance, DAILY_REVENUE, TWICE, serving)
    assert _statuses(env.instance, DAILY_REVENUE, days) == {
        PUBLISHED: "MATERIALIZED", TWICE: "FAILED", REJECTED_ONLY: "FAILED"}
    _assert_buttons_select_what_failed_reruns(env, DAILY_REVENUE, days)

    _assert_the_ui_graphql_shows_it(env, rejected, serving, older, newer)


CHECK_EXECUTIONS = """
query Executions($assetKey: AssetKeyInput!, $checkName: String!, $partition: String) {
  assetCheckExecutions(assetKey: $assetKey, checkName: $checkName, partition: $partition, limit: 10) {
    runId
    status
    partition
    evaluation {
      success
      description
      targetMaterialization { storageId runId }
      metadataEntries { label ... on TextMetadataEntry { text } }
    }
  }
}
"""
ASSET = """
query Asset($assetKey: AssetKeyInput!, $partition: String!, $checkName: String!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      assetPartitionStatuses {
        ... on TimePartitionStatuses { ranges { startKey endKey status } }
      }
      assetCheckOrError(checkName: $checkName) {
        ... on AssetCheck {
          description
          partitionStatuses {
            ... on AssetCheckTimePartitionStatuses { ranges { startKey endKey status } }
          }
        }
      }
    }
  }
  assetOrError(assetKey: $assetKey) {
    ... on Asset {
      assetMaterializations(partitions: [$partition], limit: 1) {
        runId
        description
        metadataEntries { label ... on TextMetadataEntry { text } }
      }
    }
  }
}
"""


def _texts(entries: list[dict]) -> dict[str, str]:
    return {e["label"]: e["text"] for e in entries if "text" in e}


def _by_day(ranges: list[dict]) -> dict[str, str]:
    days = {}
    for r in ranges:
        for day in CALENDAR.keys_between(r["startKey"], r["endKey"]):
            days[day] = r["status"]
    return days


def _assert_the_ui_graphql_shows_it(env, rejected: str, serving: str, older: str, newer: str) -> None:
    """What the webserver answers the UI (its GraphQL, executed against a real code server of the location)."""
    key = {"path": [DAILY_REVENUE]}
    with define_out_of_process_context(str(WORKSPACE), None, env.instance) as context:
        executions = execute_dagster_graphql(
            context, CHECK_EXECUTIONS, {"assetKey": key, "checkName": CHECK_BUSINESS_TOTALS, "partition": TWICE}
        ).data["assetCheckExecutions"]
        [failed, *earlier] = executions
        assert failed["status"] == "FAILED" and failed["evaluation"]["success"] is False
        # The check's run view and history: no target materialization (Dagster has none of an unpublished
        # version), and the rejected version and the serving one named in its description and metadata.
        assert failed["evaluation"]["targetMaterialization"] is None
        texts = _texts(failed["evaluation"]["metadataEntries"])
        assert (texts["version_id"], texts["state"], texts["serving_version_id"]) == (rejected, "rejected", serving)
        assert "unpublished" in failed["evaluation"]["description"]
        # The results of the published versions target their own materializations.
        for execution in earlier:
            target = execution["evaluation"]["targetMaterialization"]
            judged = _texts(execution["evaluation"]["metadataEntries"])["version_id"]
            assert execution["status"] == "SUCCEEDED"
            assert int(target["storageId"]) == _storage_id_of(env.instance, DAILY_REVENUE, TWICE, judged)

        def asset(day: str) -> dict:
            return execute_dagster_graphql(
                context, ASSET, {"assetKey": key, "partition": day, "checkName": CHECK_BUSINESS_TOTALS}
            ).data

        data = asset(PUBLISHED)
        node = data["assetNodeOrError"]
        statuses = _by_day(node["assetPartitionStatuses"]["ranges"])
        assert (statuses[PUBLISHED], statuses[TWICE], statuses[REJECTED_ONLY]) == ("MATERIALIZED", "FAILED", "FAILED")
        check = node["assetCheckOrError"]
        assert "targets no materialization" in check["description"]
        # The check's own per-day status: Dagster counts a result only against the day's latest materialization.
        # The rejected-only day has none, so its failed result shows; the day still serving an older version shows
        # no check status at all (the failed result judged no materialization, the serving one's results are older
        # than it) — it is in the check's history above and on the day's Failed status, not in this bar.
        check_days = _by_day(check["partitionStatuses"]["ranges"])
        assert check_days.get(REJECTED_ONLY) == "FAILED"
        assert TWICE not in check_days
        [rolled_back] = data["assetOrError"]["assetMaterializations"]
        texts = _texts(rolled_back["metadataEntries"])
        assert (texts["version_id"], texts["rolled_back_from"], texts["state"]) == (older, newer, "serving")
        assert rolled_back["runId"] == "" and f"rolled back from {newer}" in rolled_back["description"]
        [latest_of_twice] = asset(TWICE)["assetOrError"]["assetMaterializations"]
        assert _texts(latest_of_twice["metadataEntries"])["version_id"] == serving


RANGE_DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]


def test_a_range_run_points_each_days_results_at_the_version_it_judged(env):
    assert all(r.success for r in run_partitions(env.instance, RANGE_DAYS, assets=[RAW_ORDERS, ORDER_FACTS]))
    bad = {RANGE_DAYS[0]: {"ops": {ORDER_FACTS: {"config": {"defect_days": {
        RANGE_DAYS[1]: "duplicate_keys"}}}}}}
    [run] = run_partitions(env.instance, [(RANGE_DAYS[0], RANGE_DAYS[-1])], assets=[ORDER_FACTS], run_config_for=bad)
    assert not run.success
    states = {d: [v.state for v in env.catalog.versions_of(ORDER_FACTS, d)] for d in RANGE_DAYS}
    assert states == {RANGE_DAYS[0]: ["SUPERSEDED", "PUBLISHED"], RANGE_DAYS[1]: ["PUBLISHED", "REJECTED"],
                      RANGE_DAYS[2]: ["SUPERSEDED", "PUBLISHED"]}
    for day in RANGE_DAYS:
        _assert_judged_its_own_version(env, ORDER_FACTS, day, [CHECK_PRIMARY_KEY, CHECK_ROW_COUNT])
        # In the range run itself, with its run id (not runless).
        assert _evaluations(env.instance, ORDER_FACTS, CHECK_PRIMARY_KEY, day)[0][0] == run.run_id
    assert _statuses(env.instance, ORDER_FACTS, RANGE_DAYS) == {
        RANGE_DAYS[0]: "MATERIALIZED", RANGE_DAYS[1]: "FAILED", RANGE_DAYS[2]: "MATERIALIZED"}
    _assert_buttons_select_what_failed_reruns(env, ORDER_FACTS, RANGE_DAYS)
    [observation] = env.instance.fetch_observations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(ORDER_FACTS), asset_partitions=[RANGE_DAYS[1]]), limit=5
    ).records
    assert _meta(observation.asset_observation.metadata)["rejected_version_id"].startswith(f"{ORDER_FACTS}/")


def test_a_chunk_run_shows_a_day_it_rejected_as_failed(env):
    assert all(r.success for r in run_partitions(env.instance, RANGE_DAYS, assets=[RAW_ORDERS]))
    run = run_chunk(env.instance, {ORDER_FACTS: RANGE_DAYS},
                    configs={ORDER_FACTS: {"defect_days": {RANGE_DAYS[1]: "duplicate_keys"}}})
    assert not run.success
    for day in RANGE_DAYS:
        _assert_judged_its_own_version(env, ORDER_FACTS, day, [CHECK_PRIMARY_KEY, CHECK_ROW_COUNT])
    # An op job plans no materialization; the chunk op records the planned one, so the rejected day is Failed
    # (and the days never written by this run stay Missing).
    assert _statuses(env.instance, ORDER_FACTS, [*RANGE_DAYS, "2022-09-04"]) == {
        RANGE_DAYS[0]: "MATERIALIZED", RANGE_DAYS[1]: "FAILED", RANGE_DAYS[2]: "MATERIALIZED", "2022-09-04": None}
    _assert_buttons_select_what_failed_reruns(env, ORDER_FACTS, [*RANGE_DAYS, "2022-09-04"])
