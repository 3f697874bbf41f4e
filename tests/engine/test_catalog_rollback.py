"""Rollback on SQLite and PostgreSQL: back to the previous verified version (or a chosen one) by CAS, consumers
listed, history kept."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.errors import InvalidInput, NotFound, PublishConflict
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import ACTION_PUBLISH, ACTION_ROLLBACK

from .catalog_helpers import (
    ASSET,
    KEY,
    PASSED,
    begin_verified,
    identity,
    pointer_row,
    published,
    snapshot,
    state,
)

S = VersionState


# ---- rollback ---------------------------------------------------------------------------------------------------


def test_rollback_restores_the_previous_verified_version_and_lists_its_consumers(catalog):
    good = published(catalog, identity("run-good"))
    bad = published(catalog, identity("run-bad"))
    downstream = catalog.begin_version(identity("run-down", asset="daily_revenue"))
    catalog.record_reads(downstream.version_id, "run-down", [catalog.get(bad)])
    catalog.record_external_read("bi-dashboard", catalog.get(bad))
    other = catalog.begin_version(identity("run-other", asset="customer_snapshot"))
    catalog.record_reads(other.version_id, "run-other", [catalog.get(good)])  # read the good one: not listed

    move = catalog.rollback(ASSET, KEY, reason="wrong FX rates")

    assert (move.seq, move.version_id, move.previous_version_id, move.action) == (
        3,
        good,
        bad,
        ACTION_ROLLBACK,
    )
    assert state(catalog, bad) == S.ROLLED_BACK.value
    assert state(catalog, good) == S.PUBLISHED.value
    assert catalog.current(ASSET, KEY).version_id == good
    ptr = pointer_row(catalog)
    assert (ptr["version_id"], ptr["previous_version_id"]) == (good, bad)
    assert [(c.consumer, c.consumer_version_id, c.consumer_run_id) for c in move.consumers_of_previous] == [
        (downstream.version_id, downstream.version_id, "run-down"),
        ("external:bi-dashboard", None, None),
    ]
    assert move.consumers_of_previous[0].state == S.WRITING.value
    assert catalog.consumers_of(bad) == move.consumers_of_previous
    row = catalog.log_after(2)[0]
    assert (row["action"], row["version_id"], row["previous_version_id"], row["reason"]) == (
        ACTION_ROLLBACK,
        good,
        bad,
        "wrong FX rates",
    )


def test_rollback_goes_back_one_version_at_a_time(catalog):
    first = published(catalog, identity("run-1"))
    second = published(catalog, identity("run-2"))
    third = published(catalog, identity("run-3"))

    assert catalog.rollback(ASSET, KEY, reason="third is bad").version_id == second
    assert catalog.rollback(ASSET, KEY, reason="second is bad too").version_id == first
    assert [state(catalog, v) for v in (first, second, third)] == [
        S.PUBLISHED.value,
        S.ROLLED_BACK.value,
        S.ROLLED_BACK.value,
    ]
    assert catalog.rollback_target(ASSET, KEY) is None


def test_rollback_keeps_the_restored_versions_publish_time_and_logs_the_restore(catalog):
    good = published(catalog, identity("run-good"))
    originally_published = catalog.get(good).published_at
    bad = published(catalog, identity("run-bad"))

    move = catalog.rollback(ASSET, KEY, reason="bad FX")

    restored = catalog.get(good)
    assert restored.state == S.PUBLISHED.value
    assert restored.published_at == originally_published
    history = catalog.history(ASSET, KEY)
    assert [(h["action"], h["version_id"]) for h in history] == [
        (ACTION_PUBLISH, good),
        (ACTION_PUBLISH, bad),
        (ACTION_ROLLBACK, good),
    ]
    assert history[-1]["seq"] == move.seq and history[-1]["at"] >= originally_published


def test_rollback_after_a_restore_goes_to_the_version_current_most_recently(catalog):
    first = published(catalog, identity("run-1"))
    second = published(catalog, identity("run-2"))
    third = published(catalog, identity("run-3"))
    catalog.rollback(ASSET, KEY, reason="back to the start", to_version_id=first)
    fourth = published(catalog, identity("run-4"))

    # first was current just before fourth; second (published later than first) was not.
    assert catalog.rollback_target(ASSET, KEY).version_id == first
    assert catalog.rollback(ASSET, KEY, reason="fourth is bad").version_id == first
    assert [state(catalog, v) for v in (first, second, third, fourth)] == [
        S.PUBLISHED.value,
        S.SUPERSEDED.value,
        S.ROLLED_BACK.value,
        S.ROLLED_BACK.value,
    ]


def test_rollback_to_an_explicit_verified_version(catalog):
    first = published(catalog, identity("run-1"))
    second = published(catalog, identity("run-2"))
    third = published(catalog, identity("run-3"))
    assert catalog.rollback_target(ASSET, KEY).version_id == second

    move = catalog.rollback(ASSET, KEY, reason="back to the start", to_version_id=first)

    assert (move.version_id, move.previous_version_id) == (first, third)
    assert [state(catalog, v) for v in (first, second, third)] == [
        S.PUBLISHED.value,
        S.SUPERSEDED.value,
        S.ROLLED_BACK.value,
    ]


def test_rollback_without_a_previous_version_raises_not_found_and_changes_nothing(catalog):
    only = published(catalog, identity("run-only"))
    before = snapshot(catalog)
    with pytest.raises(NotFound):
        catalog.rollback(ASSET, KEY, reason="no way back")
    assert snapshot(catalog) == before
    assert state(catalog, only) == S.PUBLISHED.value


def test_rollback_of_a_partition_never_published_raises_not_found(catalog):
    begin_verified(catalog, identity())
    before = snapshot(catalog)
    with pytest.raises(NotFound):
        catalog.rollback(ASSET, KEY, reason="nothing there")
    assert snapshot(catalog) == before


def test_rollback_to_a_rejected_version_is_refused_and_changes_nothing(catalog):
    published(catalog, identity("run-1"))
    rejected = begin_verified(catalog, identity("run-2"))
    catalog.reject(rejected, [{"name": "schema_matches", "passed": False}], "blocking check(s) failed")
    current = published(catalog, identity("run-3"))
    before = snapshot(catalog)

    with pytest.raises(InvalidInput, match="REJECTED"):
        catalog.rollback(ASSET, KEY, reason="try the rejected one", to_version_id=rejected)

    assert snapshot(catalog) == before
    assert catalog.current(ASSET, KEY).version_id == current


@pytest.mark.parametrize("target", ["current", "other-partition", "in-flight"])
def test_rollback_to_an_unsuitable_version_is_refused(catalog, target):
    published(catalog, identity("run-1"))
    current = published(catalog, identity("run-2"))
    choices = {
        "current": current,
        "other-partition": published(catalog, identity("run-x", key="2022-10-02")),
        "in-flight": begin_verified(catalog, identity("run-3")),
    }
    before = snapshot(catalog)
    with pytest.raises(InvalidInput):
        catalog.rollback(ASSET, KEY, reason="r", to_version_id=choices[target])
    assert snapshot(catalog) == before


def test_rollback_needs_a_reason(catalog):
    published(catalog, identity("run-1"))
    published(catalog, identity("run-2"))
    before = snapshot(catalog)
    for reason in ("", "   "):
        with pytest.raises(InvalidInput):
            catalog.rollback(ASSET, KEY, reason=reason)
    assert snapshot(catalog) == before


def test_a_version_begun_before_a_rollback_cannot_publish_over_it(catalog):
    published(catalog, identity("run-1"))
    published(catalog, identity("run-2"))
    stale = begin_verified(catalog, identity("run-3"))  # expects run-2 as current
    catalog.rollback(ASSET, KEY, reason="run-2 is bad")
    with pytest.raises(PublishConflict):
        catalog.publish(stale, PASSED)
