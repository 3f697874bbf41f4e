"""The warehouse on object storage, end to end: ``BACKFILL_WAREHOUSE=s3://…`` and only the standard AWS
variables, the orders code location's real gated steps on a real Dagster instance, a real S3 server on loopback.

Every version is an object under the root; the catalog names it; reads verify its sha256; a rejected defect
leaves the previous object serving; gc deletes the objects of what it purges.
"""

from __future__ import annotations

import dagster as dg
import pytest
from upath import UPath

from backfill_assets.engine.model.settings import ENV_WAREHOUSE
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.examples import orders
from tests.homes import fresh_home, shipped_storage

from .conftest import DOMAINS, DomainEnv
from .test_engine_on_both_domains import _defect, _with_ancestors

ORDERS = next(d for d in DOMAINS if d.name == "orders")


@pytest.fixture
def s3env(s3_server, tmp_path, monkeypatch):
    root = s3_server.new_root()
    home = tmp_path / "dagster_home"
    settings = fresh_home(home, monkeypatch)
    monkeypatch.setenv(ENV_WAREHOUSE, root)  # fresh_home clears the location variables
    settings = type(settings).from_env()
    assert settings.warehouse_root == root
    ORDERS.definitions.seed(ORDERS.days[0], ORDERS.days[-1], ORDERS.per_day)
    with dg.instance_for_test(temp_dir=str(home), overrides=shipped_storage()) as instance:
        yield DomainEnv(ORDERS, home, settings, instance), root
    dispose_all()


def test_versions_are_objects_under_the_s3_root_and_read_back_verified(s3env):
    env, root = s3env
    graph = ORDERS.graph
    runs = env.run(list(ORDERS.days), list(graph.data_assets))
    assert all(r.success for r in runs), [r.failure for r in runs]
    for day in ORDERS.days:
        for asset in graph.data_assets:
            version = env.catalog.current(asset, day)
            assert version is not None and version.path.startswith(f"{root}/{asset}/date={day}/_runs/"), version
            assert UPath(version.path).exists() and (UPath(version.path).parent / "_manifest.json").exists()
            frame = env.warehouse.read_verified(version.path, version.sha256, version.rows)
            assert len(frame) == version.rows
    # The published Iceberg table lives in the same bucket (its metadata under _tables/) and references the objects.
    from pyiceberg.catalog import load_catalog

    from backfill_assets.engine.model.settings import TableSettings

    io = dict(TableSettings.from_env(env.settings).iceberg_io)
    iceberg = load_catalog("backfill_assets", type="sql", uri=f"sqlite:///{env.home}/iceberg_catalog.db", **io)
    table = iceberg.load_table(f"published.{orders.domain.DAILY_REVENUE}")
    assert table.metadata_location.startswith(f"{root}/_tables/published/{orders.domain.DAILY_REVENUE}/metadata/")
    served = {env.catalog.current(orders.domain.DAILY_REVENUE, d).path for d in ORDERS.days}
    assert {task.file.file_path for task in table.scan().plan_files()} == served
    assert len(table.scan().to_arrow()) == sum(env.catalog.current(orders.domain.DAILY_REVENUE, d).rows
                                               for d in ORDERS.days)
    # The CLI reads through the same verified path.
    day = ORDERS.days[0]
    read = env.cli("read", orders.domain.DAILY_REVENUE, day)
    assert read["version_id"] == env.catalog.current(orders.domain.DAILY_REVENUE, day).version_id


def test_a_rejected_defect_on_s3_leaves_the_previous_object_serving(s3env):
    env, _ = s3env
    day, asset = ORDERS.days[1], ORDERS.defect_asset
    assert all(r.success for r in env.run([day], _with_ancestors(ORDERS.graph, asset)))
    serving = env.catalog.current(asset, day)
    [bad] = env.run([day], [asset], run_config_for=_defect(day, asset))
    assert not bad.success
    rejected = env.catalog.versions_of(asset, day)[-1]
    assert rejected.state == VersionState.REJECTED.value and rejected.path != serving.path
    assert env.catalog.current(asset, day).version_id == serving.version_id
    env.warehouse.read_verified(serving.path, serving.sha256, serving.rows)  # the serving object is intact
