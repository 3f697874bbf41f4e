"""The gate tells its observers each stage of an attempt, and an observer that fails changes nothing."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import CheckOutcome
from backfill_assets.engine.wap.gate import Gate, PublishRefused
from backfill_assets.engine.wap.observer import AttemptEvent, AttemptStage
from tests.orders import GRAPH

from .catalog_helpers import ASSET, KEY, identity, published

PASSED = [CheckOutcome("row_count", True, "rows as expected")]
FAILED = [CheckOutcome("row_count", False, "rows missing"), CheckOutcome("unique_key", True, "unique")]


class Recorder:
    def __init__(self) -> None:
        self.events: list[AttemptEvent] = []

    def observe(self, event: AttemptEvent) -> None:
        self.events.append(event)


class Broken:
    def observe(self, event: AttemptEvent) -> None:
        raise ConnectionError("receiver down")


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path}/catalog.db")


def _written(catalog: Catalog, tmp_path, *observers, guard=None) -> Gate:
    """A begun gate whose version was written and waits for its checks."""
    gate = Gate(catalog, Warehouse(str(tmp_path / "warehouse")), GRAPH[ASSET], identity("run-a"),
                publish_guard=guard, observers=observers)
    gate.begin()
    catalog.mark_verifying(gate.version_id, path="/w/data.parquet", rows=10, sha256="0" * 64, stats={},
                           input_versions={})
    return gate


def test_a_published_attempt_is_told_as_began_then_published_with_the_version_replaced(catalog, tmp_path):
    serving = published(catalog, identity("run-0"))
    recorder = Recorder()
    gate = _written(catalog, tmp_path, recorder)
    gate.conclude(PASSED)

    began, done = recorder.events
    assert (began.stage, done.stage) == (AttemptStage.BEGAN, AttemptStage.PUBLISHED)
    assert began.version.state == VersionState.WRITING.value
    assert done.version.state == VersionState.PUBLISHED.value and done.version.published_at
    assert done.previous_version_id == serving and [c.name for c in done.checks] == ["row_count"]


def test_a_rejected_attempt_is_told_with_its_failed_checks_and_the_version_still_serving(catalog, tmp_path):
    serving = published(catalog, identity("run-0"))
    recorder = Recorder()
    gate = _written(catalog, tmp_path, recorder)
    gate.conclude(FAILED)

    done = recorder.events[-1]
    assert done.stage is AttemptStage.REJECTED and done.version.state == VersionState.REJECTED.value
    assert done.failed_checks == ["row_count"] and "row_count" in done.error
    assert done.serving_version_id == serving


def test_a_refused_publish_is_told_as_abandoned_because_cancelled(catalog, tmp_path):
    recorder = Recorder()
    gate = _written(catalog, tmp_path, recorder, guard=lambda: "run run-a is CANCELED")
    with pytest.raises(PublishRefused):
        gate.conclude(PASSED)
    done = recorder.events[-1]
    assert done.stage is AttemptStage.ABANDONED and done.cancelled and done.error == "run run-a is CANCELED"


def test_a_step_that_raised_is_told_as_abandoned_once(catalog, tmp_path):
    recorder = Recorder()
    gate = _written(catalog, tmp_path, recorder)
    gate.abandon_if_unfinished("ValueError: bad frame")
    gate.abandon_if_unfinished("again")  # already ABANDONED: nothing more to tell
    assert [e.stage for e in recorder.events] == [AttemptStage.BEGAN, AttemptStage.ABANDONED]
    assert not recorder.events[-1].cancelled and recorder.events[-1].version.state == VersionState.ABANDONED.value


def test_an_observer_that_raises_changes_nothing_and_the_others_are_still_told(catalog, tmp_path, caplog):
    recorder = Recorder()
    gate = _written(catalog, tmp_path, Broken(), recorder)
    outcome = gate.conclude(PASSED)

    assert outcome.published and catalog.current(ASSET, KEY).version_id == gate.version_id
    assert [e.stage for e in recorder.events] == [AttemptStage.BEGAN, AttemptStage.PUBLISHED]
    assert "Broken failed on published" in caplog.text and "receiver down" in caplog.text
