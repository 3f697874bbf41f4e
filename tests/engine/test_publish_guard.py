"""The gate asks its publish guard just before the CAS: a refused attempt abandons its version.

A run marked cancelled while its step computed (``request cancel`` when the run's code server did not answer)
keeps a live worker; when that worker reaches the publish, the guard refuses and nothing becomes visible.
"""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import CheckOutcome
from backfill_assets.engine.wap.gate import Gate, PublishRefused
from tests.orders import GRAPH

from .catalog_helpers import ASSET, KEY, begin_verified, identity, published

PASSED = [CheckOutcome("row_count", True, "rows as expected")]
REASON = "run run-a is CANCELED: it was cancelled, so it may not publish"


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path}/catalog.db")


def _gate(catalog: Catalog, tmp_path, guard) -> Gate:
    """A gate whose attempt has written and is VERIFYING, as when ``conclude`` is reached."""
    ident = identity("run-a")
    gate = Gate(catalog, Warehouse(str(tmp_path / "warehouse")), GRAPH[ASSET], ident, publish_guard=guard)
    gate.version = catalog.get(begin_verified(catalog, ident))
    return gate


def test_a_refused_publish_abandons_the_version_and_the_previous_one_keeps_serving(catalog, tmp_path):
    serving = published(catalog, identity("run-0"))
    asked = []
    gate = _gate(catalog, tmp_path, lambda: asked.append(True) or REASON)

    with pytest.raises(PublishRefused, match="CANCELED"):
        gate.conclude(PASSED)

    assert asked == [True]
    version = catalog.get(gate.version_id)
    assert version.state == VersionState.ABANDONED.value and version.error == REASON
    assert catalog.current(ASSET, KEY).version_id == serving
    # Given up, not rejected: the checks passed; and a later abandon_if_unfinished changes nothing.
    gate.abandon_if_unfinished("step failed")
    assert catalog.get(gate.version_id).error == REASON


def test_a_guard_with_nothing_against_it_lets_the_attempt_publish(catalog, tmp_path):
    gate = _gate(catalog, tmp_path, lambda: None)
    outcome = gate.conclude(PASSED)
    assert outcome.published and catalog.current(ASSET, KEY).version_id == gate.version_id


def test_the_guard_is_not_asked_when_the_checks_failed(catalog, tmp_path):
    gate = _gate(catalog, tmp_path, lambda: pytest.fail("asked although nothing was to be published"))
    outcome = gate.conclude([CheckOutcome("row_count", False, "rows missing")])
    assert not outcome.published and catalog.get(gate.version_id).state == VersionState.REJECTED.value
