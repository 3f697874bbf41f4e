"""A retried attempt of a logical run that already published reports that version instead of publishing again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backfill_assets.engine.model.identity import params_digest
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.wap.gate import earlier_publish

from .catalog_helpers import begin_verified, identity, published


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path}/catalog.db")


def test_the_version_this_run_published_is_reported_with_its_checks(catalog):
    ident = identity("run-a")
    version_id = published(catalog, ident)
    outcome = earlier_publish(catalog, ident)
    assert outcome is not None and outcome.published
    assert outcome.version.version_id == version_id and outcome.serving_version_id == version_id
    assert [(c.name, c.passed) for c in outcome.checks] == [("row_count", True)]
    # Still this run's version after a later run superseded it: a retry of this run must not publish again.
    published(catalog, identity("run-b"))
    assert earlier_publish(catalog, ident).version.version_id == version_id


@pytest.mark.parametrize(
    "other",
    [
        lambda i: replace(i, logical_run_id="run-other", dagster_run_id="run-other"),  # another logical run
        lambda i: replace(i, params_digest=params_digest({"config": {"defect": "drop_rows"}})),  # other parameters
        lambda i: replace(i, code_version="git-other"),  # other code
    ],
    ids=["run", "parameters", "code"],
)
def test_only_the_same_run_with_the_same_code_and_parameters_counts(catalog, other):
    ident = identity("run-a")
    published(catalog, ident)
    assert earlier_publish(catalog, other(ident)) is None


def test_an_attempt_that_did_not_publish_is_not_reported(catalog):
    ident = identity("run-a")
    assert earlier_publish(catalog, ident) is None
    rejected = begin_verified(catalog, ident)
    catalog.reject(rejected, [{"name": "row_count", "passed": False}], "blocking check(s) failed: row_count")
    begin_verified(catalog, ident)  # a later attempt still VERIFYING
    assert earlier_publish(catalog, ident) is None
