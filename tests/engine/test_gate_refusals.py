"""The gate publishes only what passed every check under the code version the request froze."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import CheckOutcome
from backfill_assets.engine.wap.gate import Gate
from tests.orders import GRAPH

from .catalog_helpers import ASSET, KEY, identity, published

ALL_PASSED = [CheckOutcome("row_count", True, "rows match")]


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path}/catalog.db")


def _verified_gate(catalog: Catalog, tmp_path, frozen: str | None, loaded: str) -> Gate:
    gate = Gate(catalog, Warehouse(str(tmp_path / "warehouse")), GRAPH[ASSET],
                replace(identity("run-new"), code_version=loaded), frozen_code_version=frozen)
    gate.begin()
    catalog.mark_verifying(gate.version_id, path="/w/data.parquet", rows=10, sha256="0" * 64, stats={},
                           input_versions={})
    return gate


def test_a_run_under_another_code_version_than_the_request_froze_refuses_to_publish(catalog, tmp_path):
    serving = published(catalog, identity("run-old"))
    gate = _verified_gate(catalog, tmp_path, frozen="git-frozen", loaded="git-edited")

    outcome = gate.conclude(ALL_PASSED)

    assert outcome.published is False and outcome.serving_version_id == serving
    assert "code version changed (frozen git-frozen, loaded git-edited)" in outcome.error
    assert catalog.get(gate.version_id).state == "REJECTED"
    assert catalog.current(ASSET, KEY).version_id == serving


@pytest.mark.parametrize("frozen", ["git-same", None], ids=["frozen-matches", "no-request"])
def test_the_same_code_version_or_no_request_publishes(catalog, tmp_path, frozen):
    gate = _verified_gate(catalog, tmp_path, frozen=frozen, loaded="git-same")
    assert gate.conclude(ALL_PASSED).published is True
    assert catalog.current(ASSET, KEY).version_id == gate.version_id
