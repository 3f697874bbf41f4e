"""The contenders' Dagster homes (``bench/dagster_home.py``): naive Dagster on Dagster's own classes, ours on the
project's, the pools' limit as ``--pool-limit`` sets it."""

from __future__ import annotations

import dagster as dg
import yaml

from bench.dagster_home import PRODUCT_YAML, instance_config, make_home
from bench.run import parse_args


def test_naive_dagster_runs_on_dagsters_stock_coordinator_and_launcher(tmp_path):
    product = yaml.safe_load(PRODUCT_YAML.read_text())
    product["run_launcher"] = {"module": "backfill_assets.integration.runs.warm_launcher", "class": "WarmRunLauncher"}
    stock = instance_config(product, 2, stock=True)
    assert "run_launcher" not in stock and "run_coordinator" not in stock
    assert stock["run_queue"]["dequeue_interval_seconds"] == 1
    assert stock["concurrency"] == {**product["concurrency"], "runs": {**product["concurrency"]["runs"],
                                                                      "max_concurrent_runs": 2}}
    ours_config = instance_config(product, 2)
    assert ours_config["run_launcher"] == product["run_launcher"]
    assert ours_config["run_coordinator"] == product["run_coordinator"]
    instance = dg.DagsterInstance.from_config(str(make_home(tmp_path / "home", 2, stock=True)))
    try:
        assert type(instance.run_coordinator) is dg.QueuedRunCoordinator
        assert type(instance.run_launcher).__name__ == "DefaultRunLauncher"
    finally:
        instance.dispose()


def test_a_pool_limit_changes_only_the_pools_default_limit_and_zero_keeps_the_shipped_one():
    product = yaml.safe_load(PRODUCT_YAML.read_text())
    assert instance_config(product, 2, pool_limit=0)["concurrency"]["pools"] == product["concurrency"]["pools"]
    two = instance_config(product, 2, pool_limit=2)
    assert two["concurrency"]["pools"] == {**product["concurrency"]["pools"], "default_limit": 2}
    assert {k: v for k, v in two.items() if k != "concurrency"} == {
        k: v for k, v in instance_config(product, 2).items() if k != "concurrency"}
    assert parse_args(["--pool-limit", "2"]).pool_limit == 2 and parse_args([]).pool_limit == 0
