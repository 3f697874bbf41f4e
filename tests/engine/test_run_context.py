"""The run context (``run``) in every form an engine takes: Kubernetes label values that Kubernetes accepts whatever
the identity holds (the full values recoverable), a version label ``trace`` turns back into the version id, Spark
conf and environment variables; and the engine ids recorded with a version, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.run_context import (
    K8S_PREFIX,
    RunContext,
    k8s_label_value,
    version_id_of_label,
    version_label,
)
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.engine_refs import EngineRefs, versions_with_label
from backfill_assets.engine.store.storage import Warehouse

from .catalog_helpers import begin_verified, identity

# Kubernetes' own rules (apimachinery validation): a value, and the name part of a key.
K8S_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
RUN_ID = "8f14e45f-ceea-467f-a0e6-1a2b3c4d5e6f"


def context(asset: str = "order_facts", run_id: str = RUN_ID, attempt_no: int = 2) -> RunContext:
    ident = identity(run_id=run_id, asset=asset, request_id="req-20221101-abc")
    version_id = f"{asset}/{ident.partition_key}/{run_id}/{attempt_no}"
    return RunContext(ident, attempt_no, version_id, f"/wh/{asset}/date=2022-10-01/_runs/{run_id}/attempt=2")


@given(st.text(max_size=300))
def test_any_value_becomes_a_label_kubernetes_accepts(value):
    label = k8s_label_value(value)
    assert len(label) <= 63 and K8S_VALUE.match(label), label


def test_a_label_safe_value_is_kept_and_a_rewritten_one_ends_in_a_digest_of_the_full_value():
    assert k8s_label_value("2022-10-01") == "2022-10-01"
    assert k8s_label_value("") == ""
    code = k8s_label_value("git-1a2b3c+loc-9f8e")  # '+' is not label-safe
    assert code.startswith("git-1a2b3c_loc-9f8e-") and len(code) == len("git-1a2b3c_loc-9f8e") + 11
    long_a, long_b = k8s_label_value("x" * 80 + "a"), k8s_label_value("x" * 80 + "b")
    assert len(long_a) == 63 and long_a != long_b  # cut alike, told apart by the digest


def test_the_version_label_turns_back_into_the_version_id_unless_it_had_to_be_shortened():
    run = context()
    assert run.k8s_labels[K8S_PREFIX + "version-id"] == f"order_facts.2022-10-01.{RUN_ID}.2"
    assert version_id_of_label(version_label(run.version_id)) == run.version_id
    long = context(asset="a_rather_long_asset_name_for_meters")
    shortened = version_label(long.version_id)
    assert len(shortened) == 63 and version_id_of_label(shortened) is None
    assert version_id_of_label("no-dots-here") is None and version_id_of_label("a.b.c.x") is None


def test_the_labels_reach_kubernetes_spark_and_the_environment_with_the_full_values_recoverable():
    run = context()
    assert run.labels["version_id"] == run.version_id and run.labels["attempt_no"] == "2"
    labels, annotations = run.k8s_labels, run.k8s_annotations
    assert all(k.startswith(K8S_PREFIX) and K8S_VALUE.match(v) and len(v) <= 63 for k, v in labels.items())
    assert labels[K8S_PREFIX + "dagster-run-id"] == RUN_ID and labels[K8S_PREFIX + "request-id"] == "req-20221101-abc"
    # Every label in full as an annotation, the version's location among them.
    assert annotations[K8S_PREFIX + "interval-start"] == run.labels["interval_start"]
    assert annotations[K8S_PREFIX + "location"] == run.location
    assert run.spark_conf["spark.app.name"] == f"backfill-assets:{run.version_id}"
    assert run.spark_conf["spark.backfill.logical_run_id"] == RUN_ID
    assert run.spark_conf["spark.backfill.engine_location"] == run.location + "/engine"
    assert run.env["BACKFILL_RUN_VERSION_ID"] == run.version_id
    assert run.env["BACKFILL_RUN_ENGINE_LOCATION"] == run.engine_location
    assert run.times["started_at"] == run.started_at
    assert run.times["interval_start"] == "2022-09-30T16:00:00.000000+00:00"
    assert json.loads(json.dumps(run.as_dict()))["labels"] == run.labels  # what Pipes extras carry: plain JSON
    with pytest.raises(RuntimeError, match="records no engine ids"):
        run.report_engine_id("subprocess", "host:1")


def test_engine_ids_are_recorded_once_per_version_and_found_by_id(catalog_url):
    catalog = Catalog(catalog_url)
    first, second = begin_verified(catalog, identity("run-a")), begin_verified(catalog, identity("run-b"))
    refs = EngineRefs(catalog)
    refs.record(first, "kubernetes_pod", "meters-abc-xyz")
    refs.record(first, "kubernetes_pod", "meters-abc-xyz")  # reported twice: one row
    refs.record(first, "spark_application", "application_1718_0001")
    refs.record(second, "spark_application", "application_1718_0001")  # a shared application: both found
    assert [r.engine for r in refs.of_versions([first])[first]] == ["kubernetes_pod", "spark_application"]
    assert [r.version_id for r in refs.with_id("application_1718_0001")] == [first, second]
    assert refs.with_id("nothing") == [] and refs.of_versions([second])[second][0].engine_id == "application_1718_0001"
    with pytest.raises(InvalidInput, match="engine id is empty"):
        refs.record(first, "subprocess", "  ")
    with pytest.raises(InvalidInput, match="control character"):
        refs.record(first, "subprocess", "pod\nname")


@pytest.mark.parametrize("asset", ["order_facts", "meter_readings", "a_rather_long_asset_name_for_meters"],
                         ids=["whole", "shortened-in-the-run-id", "shortened-in-the-asset"])
def test_a_pods_version_label_finds_its_version_whole_or_shortened(tmp_path, asset):
    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    mine = begin_verified(catalog, identity(RUN_ID, asset=asset))
    begin_verified(catalog, identity(RUN_ID[:-1] + "0", asset=asset))  # the same head, another run: not it
    label = version_label(mine)
    assert [v.version_id for v in versions_with_label(catalog, label)] == [mine]
    assert versions_with_label(catalog, label[:-1] + "x") == [] and versions_with_label(catalog, RUN_ID) == []


def test_gc_removes_an_engine_s_output_with_its_version(tmp_path):
    warehouse = Warehouse(str(tmp_path / "wh"))
    directory = warehouse.version_dir("order_facts", "2022-10-01", "run-a", 1)
    written = warehouse.write(directory, pd.DataFrame({"a": [1]}), {}, {})
    (directory / "engine").mkdir()
    (directory / "engine" / "part-00000.parquet").write_bytes(b"engine output")
    warehouse.remove_version(written.path)
    assert not (tmp_path / "wh" / "order_facts" / "date=2022-10-01" / "_runs" / "run-a" / "attempt=1").exists()
