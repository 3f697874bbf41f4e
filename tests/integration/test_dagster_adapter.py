"""Pins defs/dagster_adapter.py, the one module that reads ``dagster._core`` records: a Dagster upgrade that
changes them fails here, loudly, instead of silently in the driver or adoption."""

from __future__ import annotations

import subprocess

import dagster as dg
import pytest
import yaml

from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.settings import PACKAGE_DIR
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.integration.jobs import PRODUCTION_JOB
from backfill_assets.integration.keys import asset_key
from backfill_assets.integration.runs.dagster_adapter import (
    cancel_backfill,
    enforces_one_run_per_tag_value,
    list_backfills,
    materialization_of_version,
)
from tests.homes import shipped_storage
from tests.orders import DEFS as defs
from tests.orders import GRAPH
from tests.orders import MODULE as CODE_LOCATION_MODULE

DAYS = ["2022-09-01", "2022-09-02"]


@pytest.fixture
def home_instance(env, monkeypatch):
    """The product's dagster.yaml on the test home (queued runs, the run limits), and an instance built from it."""
    (env.home / "dagster.yaml").write_text((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    with dg.DagsterInstance.from_config(str(env.home)) as instance:
        yield instance


def test_the_run_queue_limits_are_read_from_the_instance(home_instance, tmp_path):
    assert enforces_one_run_per_tag_value(home_instance, T.SLOT) is True
    assert enforces_one_run_per_tag_value(home_instance, T.LANE) is False  # a shared limit, not one per value
    config = yaml.safe_load((PACKAGE_DIR.parent / "dagster.yaml").read_text())
    config["concurrency"]["runs"]["tag_concurrency_limits"] = []
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(config))
    with dg.DagsterInstance.from_config(str(tmp_path)) as bare:
        assert enforces_one_run_per_tag_value(bare, T.SLOT) is False


def test_a_job_backfill_is_listed_with_its_cells_and_tags(env, home_instance):
    # A real `dagster job backfill`: it submits every run at once (queued: no daemon here, nothing executes) and
    # is COMPLETED as a backfill right away. (Cancelling an active UI backfill: tests/e2e/test_ui_adoption.py.)
    subprocess.run(
        [dagster_bin("dagster"), "job", "backfill", "-m", CODE_LOCATION_MODULE, "-j", PRODUCTION_JOB,
         "--partitions", ",".join(DAYS), "--tags", '{"backfill/reprocess": "none"}', "--noprompt"],
        check=True, capture_output=True, timeout=120,
    )
    [info] = list_backfills(home_instance, defs.get_repository_def())
    assert info.status == "COMPLETED" and info.done and not info.cancelled and info.tags[T.REPROCESS] == "none"
    assert set(info.cells) == {(asset, day) for day in DAYS for asset in GRAPH.names}
    assert info.created_at.endswith("+00:00")
    queued = home_instance.get_runs(filters=dg.RunsFilter(tags={T.DAGSTER_BACKFILL: info.backfill_id}))
    assert sorted(r.tags[T.DAGSTER_PARTITION] for r in queued) == DAYS

    # A finished backfill is not cancelled again (its runs are the request's business), an unknown one is None.
    assert cancel_backfill(home_instance, info.backfill_id) == "COMPLETED"
    assert cancel_backfill(home_instance, "no-such-backfill") is None


def test_a_job_backfill_without_pacing_tags_is_adopted_with_what_its_assets_declare(env, home_instance):
    """Order in the definition through the UI's door: a Dagster backfill with no `backfill/order` or
    `backfill/max_active` tag over a depends-on-past asset is adopted (the adoption sensor's own function, on the
    instance the backfill was made on) as a request of max_active 1, forward — the declaration, not the run
    coordinator's default of 2. (Its runs' queue order: tests/engine/test_admission.py, tests/e2e.)"""
    from backfill_assets.engine.store.ledger import Ledger
    from backfill_assets.integration.sensors.adoption import adopt_and_track

    subprocess.run(
        [dagster_bin("dagster"), "job", "backfill", "-m", CODE_LOCATION_MODULE, "-j", PRODUCTION_JOB,
         "--partitions", ",".join(DAYS), "--noprompt"],
        check=True, capture_output=True, timeout=120,
    )
    [info] = list_backfills(home_instance, defs.get_repository_def())
    [adopted], _, _ = adopt_and_track(GRAPH, home_instance, defs.get_repository_def(), env.catalog)
    spec = Ledger(env.catalog).get(adopted).spec
    assert (spec.max_active, spec.order, spec.serial) == (1, "forward", True)


def test_a_job_backfill_on_a_stock_coordinator_is_adopted_saying_it_is_not_paced(env):
    """On an instance whose run coordinator is Dagster's own, nothing tags a Dagster backfill's runs with slot, lane
    and team, so its request must not state limits that do not hold, nor leave its pacing tag silently unapplied."""
    from backfill_assets.engine.store.ledger import Ledger
    from backfill_assets.integration.sensors.adoption import adopt_and_track
    from tests.homes import write_stock_instance_yaml

    write_stock_instance_yaml(env.home)
    subprocess.run(
        [dagster_bin("dagster"), "job", "backfill", "-m", CODE_LOCATION_MODULE, "-j", PRODUCTION_JOB,
         "--partitions", ",".join(DAYS), "--tags", '{"backfill/max_active": "1"}', "--noprompt"],
        check=True, capture_output=True, timeout=120,
    )
    with dg.DagsterInstance.from_config(str(env.home)) as instance:
        [adopted], _, _ = adopt_and_track(GRAPH, instance, defs.get_repository_def(), env.catalog)
    record = Ledger(env.catalog).get(adopted)
    assert record.message == (
        "not paced: the instance's run coordinator is not BackfillRunCoordinator, so Dagster queues this backfill's "
        "runs as they come, outside the backfill lane and team limits; its tag(s) backfill/max_active=1 are not "
        "applied"
    )


def test_a_check_evaluation_targets_the_materialization_of_the_version_it_judged(tmp_path):
    """The newest materialization of the day, or an older one when a concurrent publish landed after it, among the
    latest ``look_back``; none when no materialization carries the version."""
    (tmp_path / "dagster.yaml").write_text(yaml.safe_dump(shipped_storage()))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        for version_id in ("v1", "v2", "v3"):
            instance.report_runless_asset_event(dg.AssetMaterialization(
                asset_key=asset_key(RAW_ORDERS), partition=DAYS[0], metadata={"version_id": version_id}
            ))
        stored = {
            r.asset_materialization.metadata["version_id"].value: (r.storage_id, r.run_id, r.timestamp)
            for r in instance.fetch_materializations(asset_key(RAW_ORDERS), limit=10).records
        }
        # v3 as the storage that stored it remembers it, the others read back
        assert instance.event_log_storage.stored_materialization(asset_key(RAW_ORDERS), DAYS[0], "v3") is not None
        for version_id in ("v3", "v2", "v1"):
            target = materialization_of_version(instance, RAW_ORDERS, DAYS[0], version_id)
            assert target is not None
            assert (target.storage_id, target.run_id, target.timestamp) == stored[version_id]
        assert materialization_of_version(instance, RAW_ORDERS, DAYS[0], "v1", look_back=2) is None
        assert materialization_of_version(instance, RAW_ORDERS, DAYS[1], "v3") is None
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:  # a process that stored none of them
        target = materialization_of_version(instance, RAW_ORDERS, DAYS[0], "v3")
        assert target is not None and (target.storage_id, target.run_id, target.timestamp) == stored["v3"]
