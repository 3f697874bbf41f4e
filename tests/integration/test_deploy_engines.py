"""deploy/engines/ on paper, checked as far as it goes without a cluster: the Kubernetes and Spark code locations
import without their optional packages (dagster-k8s, pyspark), give the pod and the application the run's labels
and conf, and the Spark driver compiles."""

from __future__ import annotations

import importlib.util
import py_compile
import re
from pathlib import Path
from types import ModuleType

import dagster as dg
import pytest

from backfill_assets import RunContext
from backfill_assets.engine.model.run_context import K8S_PREFIX
from tests.engine.catalog_helpers import identity

ENGINES = Path(__file__).resolve().parents[2] / "deploy" / "engines"
RUN_ID = "8f14e45f-ceea-467f-a0e6-1a2b3c4d5e6f"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"deploy_engines_{name}", ENGINES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run() -> RunContext:
    ident = identity(run_id=RUN_ID, asset="meter_readings")
    return RunContext(ident, 1, f"meter_readings/2022-10-01/{RUN_ID}/1", "s3://wh/meter_readings/x/attempt=1")


def test_the_kubernetes_location_imports_without_dagster_k8s_and_labels_its_pod():
    kubernetes = _load("kubernetes_pipes")
    meta = kubernetes.pod_meta(_run())
    assert meta["labels"][K8S_PREFIX + "version-id"].startswith("meter_readings.2022-10-01.8f14e45f")
    assert all(len(v) <= 63 for v in meta["labels"].values())
    assert meta["annotations"][K8S_PREFIX + "location"] == "s3://wh/meter_readings/x/attempt=1"
    if importlib.util.find_spec("dagster_k8s") is None:
        with pytest.raises(RuntimeError, match="needs dagster-k8s: pip install"):
            kubernetes.definitions()


def test_the_spark_location_names_the_application_after_the_version_and_passes_its_conf():
    spark = _load("spark_pipes")
    command = spark.spark_submit(_run(), on_kubernetes=True)
    confs = dict(c.split("=", 1) for c in command[command.index("client") + 1:-1] if c != "--conf")
    assert confs["spark.app.name"] == f"backfill-assets:meter_readings/2022-10-01/{RUN_ID}/1"
    assert confs["spark.backfill.engine_location"] == "s3://wh/meter_readings/x/attempt=1/engine"
    assert confs[f"spark.kubernetes.driver.label.{K8S_PREFIX}dagster-run-id"] == RUN_ID
    assert all(re.match(r"^[\w.-]{0,63}$", v) for k, v in confs.items() if ".label." in k)
    assert isinstance(spark.definitions(), dg.Definitions)
    py_compile.compile(str(ENGINES / "spark_job.py"), doraise=True)
