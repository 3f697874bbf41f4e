"""Write–audit–publish on a real Dagster instance: publish, supersede, reject with the old version serving."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import dagster as dg
import pytest

from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import (
    CHECK_BUSINESS_TOTALS,
    CHECK_FILE_INTEGRITY,
    CHECK_PRIMARY_KEY,
    CHECK_ROW_COUNT,
    CHECK_SCHEMA,
)
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.corruption import file_halved_before_its_audits
from tests.orders import run_partitions

DAY1, DAY2 = "2022-09-01", "2022-09-02"
PIPELINE = [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE]


def _defect(asset: str, kind: str) -> dict:
    return {"ops": {asset: {"config": {"defect": kind}}}}


def _materializations(instance: dg.DagsterInstance, asset: str, run_id: str):
    records = instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=1000)
    return [r for r in records.records if r.run_id == run_id]


def _check_records(instance: dg.DagsterInstance, asset: str, check: str, run_id: str):
    history = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(asset), check), limit=100
    )
    return [r for r in history if r.run_id == run_id]


def test_good_partition_is_published_with_identity_everywhere(env):
    [run] = run_partitions(env.instance, [DAY1], assets=PIPELINE)
    assert run.success, run.failure
    current = env.catalog.current(ORDER_FACTS, DAY1)
    assert current.state == "PUBLISHED"
    assert current.version_id == f"{ORDER_FACTS}/{DAY1}/{run.run_id}/1"
    assert f"/{ORDER_FACTS}/date={DAY1}/_runs/{run.run_id}/attempt=1/data.parquet" in current.path
    assert hashlib.sha256(Path(current.path).read_bytes()).hexdigest() == current.sha256
    assert current.published_at and current.started_at and current.ended_at and current.requested_at
    assert current.interval_start.startswith("2022-08-31T16:00:00")  # Shanghai midnight in UTC

    [mat] = _materializations(env.instance, ORDER_FACTS, run.run_id)
    meta = mat.asset_materialization.metadata
    assert meta["version_id"].value == current.version_id
    assert meta["code_version"].value == "test-code-1"
    assert meta["attempt_no"].value == 1
    assert meta["input_versions"].value == {f"{RAW_ORDERS}/{DAY1}": env.catalog.current(RAW_ORDERS, DAY1).version_id}

    identity = Warehouse.read_identity(current.path)
    manifest = json.loads((Path(current.path).parent / "_manifest.json").read_text())
    for labels in (identity, manifest["identity"]):
        assert labels["logical_run_id"] == run.run_id and labels["partition_key"] == DAY1
        assert labels["attempt_no"] == "1" and labels["code_version"] == "test-code-1"
    assert manifest["sha256"] == current.sha256

    logs = env.instance.all_logs(run.run_id)
    assert any(current.version_id in (e.user_message or "") for e in logs)
    for check in (CHECK_ROW_COUNT, CHECK_PRIMARY_KEY, CHECK_BUSINESS_TOTALS, CHECK_SCHEMA, CHECK_FILE_INTEGRITY):
        [rec] = _check_records(env.instance, ORDER_FACTS, check, run.run_id)
        assert rec.status.value == "SUCCEEDED" and rec.partition == DAY1


def test_second_run_supersedes_the_first(env):
    [first] = run_partitions(env.instance, [DAY1], assets=PIPELINE)
    [second] = run_partitions(env.instance, [DAY1], assets=PIPELINE)
    assert first.success and second.success
    states = {v.logical_run_id: v.state for v in env.catalog.versions_of(DAILY_REVENUE, DAY1)}
    assert states == {first.run_id: "SUPERSEDED", second.run_id: "PUBLISHED"}
    current = env.catalog.current(DAILY_REVENUE, DAY1)
    assert current.logical_run_id == second.run_id
    # Identical inputs → identical content, but a separate immutable file.
    old = [v for v in env.catalog.versions_of(DAILY_REVENUE, DAY1) if v.logical_run_id == first.run_id][0]
    assert old.path != current.path and Path(old.path).exists()


@pytest.mark.parametrize(
    "defect, failing_check",
    [
        ("drop_rows", CHECK_ROW_COUNT),
        ("duplicate_keys", CHECK_PRIMARY_KEY),
        ("bad_schema", CHECK_SCHEMA),
        ("corrupt_file", CHECK_FILE_INTEGRITY),
    ],
)
def test_defect_is_rejected_and_previous_version_keeps_serving(env, defect, failing_check, tmp_path, monkeypatch):
    [good] = run_partitions(env.instance, [DAY1], assets=PIPELINE)
    assert good.success
    serving = env.catalog.current(ORDER_FACTS, DAY1)
    serving_frame = env.warehouse.read_verified(serving.path, serving.sha256, serving.rows)
    revenue_before = env.catalog.current(DAILY_REVENUE, DAY1)

    if defect == "corrupt_file":  # the bytes on disk, not the frame: damaged between the write and the audits
        with file_halved_before_its_audits(env.settings.catalog_url, ORDER_FACTS, DAY1, tmp_path / "hold",
                                           monkeypatch) as halved:
            # raw_orders is published already: order_facts is the first step to cross the hold.
            [bad] = run_partitions(env.instance, [DAY1], assets=PIPELINE[1:])
        assert halved, "the step never held at after_verifying"
    else:
        [bad] = run_partitions(
            env.instance, [DAY1], assets=PIPELINE, run_config_for={DAY1: _defect(ORDER_FACTS, defect)}
        )
    assert not bad.success
    assert "REJECTED" in bad.failure and serving.version_id in bad.failure and failing_check in bad.failure

    rejected = env.catalog.get(f"{ORDER_FACTS}/{DAY1}/{bad.run_id}/1")
    assert rejected.state == "REJECTED"
    assert failing_check in rejected.error
    assert Path(rejected.path).exists(), "rejected files stay on disk for inspection"
    # The pointer did not move and readers get the previous data, byte for byte.
    current = env.catalog.current(ORDER_FACTS, DAY1)
    assert current.version_id == serving.version_id
    assert env.warehouse.read_verified(current.path, current.sha256).equals(serving_frame)
    # Downstream did not run on the rejected version.
    assert env.catalog.current(DAILY_REVENUE, DAY1).version_id == revenue_before.version_id
    assert not [v for v in env.catalog.versions_of(DAILY_REVENUE, DAY1) if v.logical_run_id == bad.run_id]
    # In Dagster: no materialization for that run, and a failed check record for the partition.
    assert _materializations(env.instance, ORDER_FACTS, bad.run_id) == []
    [rec] = _check_records(env.instance, ORDER_FACTS, failing_check, bad.run_id)
    assert rec.status.value == "FAILED" and rec.partition == DAY1


def test_first_ever_rejection_serves_nothing(env):
    [bad] = run_partitions(
        env.instance, [DAY2], assets=[RAW_ORDERS], run_config_for={DAY2: _defect(RAW_ORDERS, "drop_rows")}
    )
    assert not bad.success and "still serving nothing" in bad.failure
    assert env.catalog.current(RAW_ORDERS, DAY2) is None


def test_downstream_of_an_unpublished_input_refuses_and_abandons(env):
    [run] = run_partitions(env.instance, [DAY2], assets=[ORDER_FACTS])
    assert not run.success and "has no published version" in run.failure
    [version] = env.catalog.versions_of(ORDER_FACTS, DAY2)
    assert version.state == "ABANDONED"
    assert env.catalog.current(ORDER_FACTS, DAY2) is None


def test_depends_on_past_needs_the_previous_day_published(env):
    [day2] = run_partitions(env.instance, [DAY2], assets=[RAW_ORDERS, ORDER_FACTS, CUSTOMER_SNAPSHOT])
    assert not day2.success and "depends on its previous day" in day2.failure
    runs = run_partitions(env.instance, [DAY1, DAY2], assets=[RAW_ORDERS, ORDER_FACTS, CUSTOMER_SNAPSHOT])
    assert all(r.success for r in runs), [r.failure for r in runs]
    snap1 = env.catalog.current(CUSTOMER_SNAPSHOT, DAY1)
    snap2 = env.catalog.current(CUSTOMER_SNAPSHOT, DAY2)
    assert snap2.input_versions[f"{CUSTOMER_SNAPSHOT}/{DAY1}"] == snap1.version_id
    assert snap2.stats["lifetime_orders"]["sum"] > snap1.stats["lifetime_orders"]["sum"]


def production_job_def() -> dg.JobDefinition:
    """Module-level, so that Dagster can reconstruct the job for a re-execution."""
    from backfill_assets.integration.jobs import PRODUCTION_JOB
    from tests.orders import DEFS as defs

    return defs.resolve_job_def(PRODUCTION_JOB)


def test_reexecuting_a_run_that_published_reports_its_version_instead_of_publishing_again(env):
    """A re-execution is the same logical run (Dagster's root run id): what it already published stands."""
    [first] = run_partitions(env.instance, [DAY1], assets=[RAW_ORDERS])
    [version] = env.catalog.versions_of(RAW_ORDERS, DAY1)
    with dg.execute_job(
        dg.reconstructable(production_job_def),
        instance=env.instance,
        # As the UI's "Re-execute": the parent's tags (its partition among them) carry over.
        tags=env.instance.get_run_by_id(first.run_id).tags,
        reexecution_options=dg.ReexecutionOptions(parent_run_id=first.run_id),
    ) as again:
        assert again.success and again.dagster_run.root_run_id == first.run_id
    assert [v.version_id for v in env.catalog.versions_of(RAW_ORDERS, DAY1)] == [version.version_id]
    [reported] = _materializations(env.instance, RAW_ORDERS, again.run_id)
    assert reported.asset_materialization.metadata["version_id"].value == version.version_id
    [check] = _check_records(env.instance, RAW_ORDERS, CHECK_ROW_COUNT, again.run_id)
    assert check.status.value == "SUCCEEDED"
