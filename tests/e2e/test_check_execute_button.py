"""The Checks tab's "Execute" / "Execute all": the webserver launches a run that selects only the asset's checks
(``assetSelection: []``, ``assetCheckSelection``), with no partition (what the button sends) or with one
(``dagster/partition``), through its GraphQL API. Such a run never writes, publishes or moves a pointer. With a day it
re-audits the version serving the day (its results are the checks' evaluation, attached to that version's
materialization); without one it says in one warning line how to re-audit or re-run a day and leaves the checks
skipped — never a traceback about ``partition_key``, never "Execution failed" on the Checks tab."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

import dagster as dg
import pytest
import yaml
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.store import db
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.wap.audit import CHECK_BUSINESS_TOTALS, CHECK_FILE_INTEGRITY
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.orders import run_partitions

from .conftest import prepare_home
from .services import Webserver, stop_process

DAY, REJECTED_DAY = "2022-10-03", "2022-10-04"
DROP_ROWS = {"ops": {DAILY_REVENUE: {"config": {"defect": "drop_rows"}}}}  # the defects plug-in of the example
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]
RUN_TIMEOUT = 120.0


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterable[tuple[Webserver, dg.DagsterInstance, Catalog]]:
    """A real dagster-webserver on the shipped instance whose runs launch at once (no daemon), DAY published."""
    home = tmp_path_factory.mktemp("checks_tab") / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        prepare_home(mp, home, seed_from=DAY, seed_to=REJECTED_DAY)
        # The shipped instance (its storage decides what the Checks list shows), its runs launched at once.
        shipped = yaml.safe_load((home / "dagster.yaml").read_text())
        shipped.pop("run_launcher")
        shipped["run_coordinator"] = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
        (home / "dagster.yaml").write_text(yaml.safe_dump(shipped))
        instance = dg.DagsterInstance.get()
        # Both days published before the webserver starts: the version that keeps serving REJECTED_DAY is then
        # materialized seconds before the rejected attempt starts, as it is in real use (see _rejected_attempt).
        assert all(r.success for r in run_partitions(instance, [DAY, REJECTED_DAY], assets=PIPELINE))
        server = Webserver(home)
        try:
            server.wait_ready()
            yield server, instance, Catalog.of_settings(Settings.from_env())
        finally:
            stop_process(server.proc)
            instance.dispose()
            db.dispose_all()


JOBS_OF_CHECKS = """
query Checks($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      jobNames
      repository { name location { name } }
      assetChecksOrError { ... on AssetChecks { checks { name jobNames canExecuteIndividually } } }
    }
  }
}
"""
# The fields of the Checks tab's AssetChecksQuery that decide what it shows of each check (its
# AssetCheckTableFragment): the per-day statuses and the execution for the latest materialization.
CHECKS_TAB = """
query Checks($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      assetChecksOrError {
        ... on AssetChecks {
          checks {
            name
            executionForLatestMaterialization { status runId partition }
            partitionStatuses { ... on AssetCheckTimePartitionStatuses { ranges { startKey endKey status } } }
          }
        }
      }
    }
  }
}
"""
PARTITION_PAGE = """
query Partition($assetKey: AssetKeyInput!, $partition: String!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode { latestRunForPartition(partition: $partition) { id status } }
  }
  assetOrError(assetKey: $assetKey) {
    ... on Asset {
      assetMaterializations(partitions: [$partition], limit: 1) {
        runId
        metadataEntries { label ... on TextMetadataEntry { text } }
      }
    }
  }
}
"""
LAUNCH = """
mutation Launch($executionParams: ExecutionParams!) {
  launchPipelineExecution(executionParams: $executionParams) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
  }
}
"""


def _execute_checks(server: Webserver, tags: list[dict]) -> str:
    """What the Checks tab's ExecuteChecksButton sends: the checks' common job, no assets, every check, and
    ``tags`` (the button sends none; a day is ``dagster/partition``)."""
    key = {"path": [DAILY_REVENUE]}
    node = server.graphql(JOBS_OF_CHECKS, {"assetKey": key})["assetNodeOrError"]
    checks = node["assetChecksOrError"]["checks"]
    assert {c["canExecuteIndividually"] for c in checks} == {"CAN_EXECUTE"}  # the button is enabled
    common = [name for name in checks[0]["jobNames"] if all(name in c["jobNames"] for c in checks)]
    params = {
        "mode": "default", "executionMetadata": {"tags": tags}, "runConfigData": "{}",
        "selector": {
            "jobName": common[0] if common else node["jobNames"][0],
            "repositoryLocationName": node["repository"]["location"]["name"],
            "repositoryName": node["repository"]["name"],
            "assetSelection": [], "assetCheckSelection": [{"assetKey": key, "name": c["name"]} for c in checks],
        },
    }
    launched = server.graphql(LAUNCH, {"executionParams": params})["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def _finished(instance: dg.DagsterInstance, run_id: str) -> dg.DagsterRun:
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        run = instance.get_run_by_id(run_id)
        if run.is_finished:
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not finish in {RUN_TIMEOUT} s")


def _step_failure(instance: dg.DagsterInstance, run_id: str) -> str:
    failures = [e for e in instance.all_logs(run_id) if e.dagster_event and e.dagster_event.is_step_failure]
    return "\n".join(str(e.dagster_event.step_failure_data.error) for e in failures)


def _warnings(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.user_message for e in instance.all_logs(run_id) if e.level == logging.WARNING and not e.dagster_event]


def _checks(server: Webserver) -> dict[str, dict]:
    node = server.graphql(CHECKS_TAB, {"assetKey": {"path": [DAILY_REVENUE]}})["assetNodeOrError"]
    return {c["name"]: c for c in node["assetChecksOrError"]["checks"]}


def _overview(server: Webserver) -> dict[str, str | None]:
    """Each check's Overview, "Latest execution" → "Evaluation result": the status of its execution for the latest
    materialization (None: "Not evaluated")."""
    return {name: (c["executionForLatestMaterialization"] or {}).get("status") for name, c in _checks(server).items()}


def _days(check: dict) -> dict[str, str]:
    """A check's per-day statuses (its status bar), one entry per day of each range."""
    ranges = (check["partitionStatuses"] or {}).get("ranges") or []
    return {day: r["status"] for r in ranges for day in (r["startKey"], r["endKey"])}


def _list_label(check: dict) -> str:
    """The label under a check's name on the Checks tab's list, as the UI derives it: from the per-day statuses
    when any day has one (Failed if any failed, else In progress, Skipped, Succeeded), otherwise from the
    execution for the latest materialization (none: Not evaluated)."""
    days = set(_days(check).values())
    if days:
        for status, label in (("FAILED", "Failed"), ("EXECUTION_FAILED", "Failed"), ("IN_PROGRESS", "In progress"),
                              ("SKIPPED", "Skipped"), ("SUCCEEDED", "Succeeded")):
            if status in days:
                return label
    latest = (check["executionForLatestMaterialization"] or {}).get("status")
    return {None: "Not evaluated", "FAILED": "Failed", "EXECUTION_FAILED": "Failed", "IN_PROGRESS": "In progress",
            "SKIPPED": "Skipped", "SUCCEEDED": "Succeeded"}[latest]


def _checks_list(server: Webserver) -> dict[str, str]:
    """Each check's label on the Checks tab's list."""
    return {name: _list_label(c) for name, c in _checks(server).items()}


def test_execute_without_a_day_says_in_one_line_how_to_rerun_a_days_checks_and_turns_nothing_red(served):
    server, instance, catalog = served
    serving = catalog.current(DAILY_REVENUE, DAY).version_id
    run = _finished(instance, _execute_checks(server, []))
    assert run.status == dg.DagsterRunStatus.SUCCESS, _step_failure(instance, run.run_id)
    [said] = _warnings(instance, run.run_id)
    assert "\n" not in said and "backfill-assets request create --assets daily_revenue" in said, said
    assert "dagster/partition=DAY" in said and "partition_key" not in said, said
    # Skipped, not "Execution failed": nothing red beside a day whose version passed its checks.
    assert set(_overview(server).values()) <= {"SKIPPED", "SUCCEEDED"}, _overview(server)
    assert set(_checks_list(server).values()) == {"Succeeded"}, _checks_list(server)
    assert catalog.current(DAILY_REVENUE, DAY).version_id == serving


def test_execute_on_a_published_day_reaudits_its_serving_version_read_only(served):
    server, instance, catalog = served
    serving = catalog.current(DAILY_REVENUE, DAY)
    versions_before = len(catalog.versions_of(DAILY_REVENUE, DAY))
    run = _finished(instance, _execute_checks(server, [{"key": "dagster/partition", "value": DAY}]))
    assert run.status == dg.DagsterRunStatus.SUCCESS, _step_failure(instance, run.run_id)
    assert catalog.current(DAILY_REVENUE, DAY).version_id == serving.version_id
    assert len(catalog.versions_of(DAILY_REVENUE, DAY)) == versions_before
    for check in (CHECK_BUSINESS_TOTALS, CHECK_FILE_INTEGRITY):
        [latest, *_] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey(DAILY_REVENUE), check), limit=5)
        assert (latest.run_id, latest.partition, latest.status.value) == (run.run_id, DAY, "SUCCEEDED")
        evaluation = latest.event.dagster_event.asset_check_evaluation_data
        assert evaluation.metadata["version_id"].value == serving.version_id
    assert set(_overview(server).values()) == {"SUCCEEDED"}, _overview(server)
    assert set(_checks_list(server).values()) == {"Succeeded"}, _checks_list(server)


def _rejected_attempt(instance: dg.DagsterInstance, catalog: Catalog) -> tuple[str, str, set[str]]:
    """REJECTED_DAY recomputed with a defect that its blocking checks reject; returns the run, the version still
    serving and the checks that rejected the attempt."""
    serving = catalog.current(DAILY_REVENUE, REJECTED_DAY).version_id
    [bad] = run_partitions(instance, [REJECTED_DAY], assets=[DAILY_REVENUE], run_config_for={REJECTED_DAY: DROP_ROWS})
    assert not bad.success and catalog.current(DAILY_REVENUE, REJECTED_DAY).version_id == serving
    rejected_by = set(catalog.get(f"{DAILY_REVENUE}/{REJECTED_DAY}/{bad.run_id}/1").error.split(": ")[-1].split(", "))
    # Dagster shows a result without a target materialization (the rejected attempt's) as the check's latest only
    # if the check execution was created after the day's latest materialization; SQLite stores that creation time
    # in whole seconds, at the start of the attempt's run. The fixture published the serving version before the
    # webserver started, so the attempt is seconds later, as a recompute is in real use; said here, should it fail.
    [serving_materialization] = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(DAILY_REVENUE), asset_partitions=[REJECTED_DAY]), limit=1
    ).records
    for check in rejected_by:
        [created, *_] = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey(DAILY_REVENUE), check), limit=1)
        assert created.run_id == bad.run_id and created.create_timestamp > serving_materialization.timestamp, (
            "the rejected attempt started in the same second as the serving version's materialization")
    return bad.run_id, serving, rejected_by


def test_after_a_rejection_the_pages_show_the_rejected_attempt_beside_the_version_still_serving(served):
    """What docs/UI.md says of the Checks tab and of the partition page after a rejection of a day an older version
    still serves, as the webserver answers the UI. The check's Overview shows the rejected attempt's own results
    (Failed for the checks that rejected it, Passed for those it passed) until the day has a newer materialization
    without them (Not evaluated). The Checks list does not: a rejected attempt's results target no materialization
    while the day has one, so the day has no status in the checks' per-day statuses, and the list shows the other
    days' (Succeeded). The day's page has its green Materialized tag (the version still serving) beside the red
    banner of the failed run (the rejected attempt)."""
    server, instance, catalog = served
    bad_run, serving, rejected_by = _rejected_attempt(instance, catalog)
    overview = _overview(server)
    assert {name for name, status in overview.items() if status == "FAILED"} == rejected_by, overview
    assert {name for name, status in overview.items() if status == "SUCCEEDED"} == set(overview) - rejected_by
    checks = _checks(server)
    assert {c["executionForLatestMaterialization"]["runId"] for c in checks.values()} == {bad_run}
    for name, check in checks.items():
        assert _days(check) == {DAY: "SUCCEEDED"}, (name, _days(check))  # nothing for REJECTED_DAY
        assert _list_label(check) == "Succeeded", (name, check)  # the checks that rejected it too

    page = server.graphql(PARTITION_PAGE, {"assetKey": {"path": [DAILY_REVENUE]}, "partition": REJECTED_DAY})
    latest_run = page["assetNodeOrError"]["latestRunForPartition"]
    assert (latest_run["id"], latest_run["status"]) == (bad_run, "FAILURE")  # the red banner
    [latest] = page["assetOrError"]["assetMaterializations"]  # the green Materialized tag: the serving version
    assert {e["label"]: e.get("text") for e in latest["metadataEntries"]}["version_id"] == serving

    # Later: the day republished (its results target the new materialization: Passed), then rolled back to the
    # version that served before; the rollback's materialization has no check results, so the Overview says
    # Not evaluated for every check.
    assert all(r.success for r in run_partitions(instance, [REJECTED_DAY], assets=[DAILY_REVENUE]))
    assert set(_overview(server).values()) == {"SUCCEEDED"}, _overview(server)
    rolled_back = CliRunner().invoke(cli, ["rollback", DAILY_REVENUE, REJECTED_DAY, "--to", serving,
                                           "--reason", "the Overview after a rollback"])
    assert rolled_back.exit_code == 0, rolled_back.output
    assert catalog.current(DAILY_REVENUE, REJECTED_DAY).version_id == serving
    assert set(_overview(server).values()) == {None}, _overview(server)
    assert set(_checks_list(server).values()) == {"Succeeded"}, _checks_list(server)
