"""The catalog on SQLite and PostgreSQL: attempts, publish by compare-and-swap, the publish log (rollback:
test_catalog_rollback.py, races: test_catalog_races.py)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, fields, replace

import pytest

from backfill_assets.engine.model.errors import AssetOwnedElsewhere, IllegalTransition, NotFound, PublishConflict
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import ACTION_PUBLISH, ACTION_ROLLBACK
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.ledger import Ledger
from tests.orders import GRAPH
from tests.specs import spec_of

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


# ---- versions ---------------------------------------------------------------------------------------------------


def test_begin_version_numbers_attempts_1_2_3_within_one_logical_run(catalog):
    first, second, third = (catalog.begin_version(identity("run-a")) for _ in range(3))
    assert [v.attempt_no for v in (first, second, third)] == [1, 2, 3]
    assert [v.version_id for v in (first, second, third)] == [
        f"{ASSET}/{KEY}/run-a/1",
        f"{ASSET}/{KEY}/run-a/2",
        f"{ASSET}/{KEY}/run-a/3",
    ]
    assert [catalog.get(v.version_id).state for v in (first, second, third)] == ["ABANDONED", "ABANDONED", "WRITING"]


def test_a_new_attempt_abandons_the_unfinished_attempts_of_its_run_whose_publish_is_then_refused(catalog):
    """A worker killed mid-step leaves its attempt WRITING or VERIFYING; the step redelivered to another worker
    begins the next attempt. The dead one reads ABANDONED, and if its process was only cut off, not dead, its
    publish is refused: one logical run publishes one attempt."""
    other_run = catalog.begin_version(identity("run-b"))
    cut_off = begin_verified(catalog, identity("run-a"))
    retry = begin_verified(catalog, identity("run-a"))
    dead = catalog.get(cut_off)
    assert dead.state == S.ABANDONED.value
    assert "attempt 2 of the same run began" in dead.error and dead.ended_at
    with pytest.raises(IllegalTransition):
        catalog.publish(cut_off, PASSED)
    assert catalog.get(other_run.version_id).state == S.WRITING.value  # another logical run is untouched
    catalog.publish(retry, PASSED)
    assert pointer_row(catalog)["version_id"] == retry


def test_a_claim_seen_held_is_not_read_again_yet_another_location_is_still_refused(catalog):
    # The claim is remembered per (asset, location) after its first attempt: the same catalog object asked by
    # another location still reads the owner, and is refused before anything is written.
    first = catalog.begin_version(replace(identity("run-a"), location="east"))
    catalog.begin_version(replace(identity("run-b"), location="east"))
    before = snapshot(catalog)
    with pytest.raises(AssetOwnedElsewhere):
        catalog.begin_version(replace(identity("run-c"), location="west"))
    assert snapshot(catalog) == before
    assert first.attempt_no == 1


def test_attempts_are_numbered_per_run_and_partition(catalog):
    catalog.begin_version(identity("run-a"))
    catalog.begin_version(identity("run-a"))
    assert catalog.begin_version(identity("run-b")).attempt_no == 1
    assert catalog.begin_version(identity("run-a", key="2022-10-02")).attempt_no == 1
    assert catalog.begin_version(identity("run-a", asset="daily_revenue")).attempt_no == 1
    assert [v.attempt_no for v in catalog.versions_of(ASSET, KEY)] == [1, 2, 1]


def test_begin_version_records_the_identity_and_the_pointer_it_saw(catalog):
    first = published(catalog, identity("run-a"))
    version = catalog.begin_version(identity("run-b", request_id="req-20221101-0000abcd"))
    assert version.expected_previous_version_id == first
    assert version.request_id == "req-20221101-0000abcd"
    assert version.interval_start == "2022-09-30T16:00:00.000000+00:00"
    assert version.interval_end == "2022-10-01T16:00:00.000000+00:00"
    assert version.code_version == "git-abc123"


def test_a_version_read_whole_is_the_record_its_init_builds(catalog):
    """Whole rows are read without the frozen dataclass's ``__init__`` (``Version.from_rows``): the record is the
    same in every way a caller can tell, and as frozen."""
    version_id = published(catalog, identity("run-a"))
    [read] = catalog.versions_of(ASSET, KEY)
    built = Version(**{f.name: getattr(read, f.name) for f in fields(Version)})
    assert read == built and repr(read) == repr(built) and read.as_dict() == built.as_dict()
    assert read.version_id == version_id and read.checks == PASSED and read.stats == {"rows": 10}
    assert replace(read, state="REJECTED").state == "REJECTED" and read.state == "PUBLISHED"
    with pytest.raises(FrozenInstanceError):
        read.state = "REJECTED"  # type: ignore[misc]


def test_versions_cannot_skip_or_repeat_a_state(catalog):
    version_id = begin_verified(catalog, identity())
    with pytest.raises(IllegalTransition):
        catalog.mark_verifying(version_id, path="p", rows=1, sha256="0" * 64, stats={}, input_versions={})
    writing = catalog.begin_version(identity("run-b")).version_id
    with pytest.raises(IllegalTransition):
        catalog.publish(writing, PASSED)
    assert state(catalog, writing) == S.WRITING.value
    catalog.abandon(writing, "run died")
    assert state(catalog, writing) == S.ABANDONED.value


def test_unknown_version_is_not_found(catalog):
    with pytest.raises(NotFound):
        catalog.get(f"{ASSET}/{KEY}/nope/1")
    with pytest.raises(NotFound):
        catalog.publish(f"{ASSET}/{KEY}/nope/1", PASSED)


# ---- publish ----------------------------------------------------------------------------------------------------


def test_publish_sets_the_pointer_the_state_and_a_log_row(catalog):
    assert catalog.current(ASSET, KEY) is None
    version_id = begin_verified(catalog, identity(request_id="req-20221101-0000abcd"))
    move = catalog.publish(version_id, PASSED)

    assert (move.seq, move.version_id, move.previous_version_id, move.action) == (
        1,
        version_id,
        None,
        ACTION_PUBLISH,
    )
    version = catalog.current(ASSET, KEY)
    assert version.version_id == version_id
    assert version.state == S.PUBLISHED.value
    assert version.published_at is not None and version.published_at.endswith("+00:00")
    assert version.checks == PASSED
    ptr = pointer_row(catalog)
    assert (ptr["version_id"], ptr["previous_version_id"]) == (version_id, None)
    [row] = catalog.log_after(0)
    assert row["seq"] == 1
    assert (row["asset"], row["partition_key"], row["version_id"]) == (ASSET, KEY, version_id)
    assert (row["action"], row["previous_version_id"], row["request_id"]) == (
        ACTION_PUBLISH,
        None,
        "req-20221101-0000abcd",
    )


def test_a_second_publish_supersedes_the_first(catalog):
    first = published(catalog, identity("run-a"))
    second = begin_verified(catalog, identity("run-b"))
    move = catalog.publish(second, PASSED)

    assert (move.seq, move.previous_version_id) == (2, first)
    assert state(catalog, first) == S.SUPERSEDED.value
    assert state(catalog, second) == S.PUBLISHED.value
    assert catalog.current(ASSET, KEY).version_id == second
    ptr = pointer_row(catalog)
    assert (ptr["version_id"], ptr["previous_version_id"]) == (second, first)
    assert [(r["seq"], r["version_id"], r["previous_version_id"]) for r in catalog.log_after(0)] == [
        (1, first, None),
        (2, second, first),
    ]


def test_publishing_a_rejected_version_is_illegal_and_changes_nothing(catalog):
    serving = published(catalog, identity("run-a"))
    rejected = begin_verified(catalog, identity("run-b"))
    catalog.reject(rejected, [{"name": "row_count", "passed": False}], "blocking check(s) failed: row_count")
    before = snapshot(catalog)

    with pytest.raises(IllegalTransition, match="REJECTED -> PUBLISHED"):
        catalog.publish(rejected, PASSED)

    assert snapshot(catalog) == before
    assert state(catalog, rejected) == S.REJECTED.value
    assert catalog.current(ASSET, KEY).version_id == serving


def test_publishing_a_published_version_again_is_illegal(catalog):
    version_id = published(catalog, identity())
    before = snapshot(catalog)
    with pytest.raises(IllegalTransition):
        catalog.publish(version_id, PASSED)
    assert snapshot(catalog) == before


@pytest.mark.parametrize("already_published", [False, True], ids=["empty-partition", "replacing"])
def test_publish_conflict_when_another_version_was_published_after_begin(catalog, already_published):
    original = published(catalog, identity("run-0")) if already_published else None
    loser = begin_verified(catalog, identity("run-slow"))
    winner = published(catalog, identity("run-fast"))
    before = snapshot(catalog)

    with pytest.raises(PublishConflict) as info:
        catalog.publish(loser, PASSED)

    assert info.value.current_version_id == winner
    assert snapshot(catalog) == before
    assert state(catalog, loser) == S.VERIFYING.value
    assert catalog.current(ASSET, KEY).version_id == winner
    ptr = pointer_row(catalog)
    assert (ptr["version_id"], ptr["previous_version_id"]) == (winner, original)
    # The failed attempt consumed no sequence number.
    nxt = published(catalog, identity("run-next"))
    assert [r["seq"] for r in catalog.log_after(0)] == list(range(1, len(catalog.log_after(0)) + 1))
    assert catalog.log_after(0)[-1]["version_id"] == nxt


def test_publishes_of_different_partitions_do_not_conflict(catalog):
    a = begin_verified(catalog, identity("run-a", key="2022-10-01"))
    b = begin_verified(catalog, identity("run-b", key="2022-10-02"))
    catalog.publish(a, PASSED)
    catalog.publish(b, PASSED)
    assert catalog.current(ASSET, "2022-10-01").version_id == a
    assert catalog.current(ASSET, "2022-10-02").version_id == b
    assert set(catalog.current_many(ASSET, ["2022-10-01", "2022-10-02", "2022-10-03"])) == {
        "2022-10-01",
        "2022-10-02",
    }


def test_a_version_of_a_cancelled_request_is_refused_inside_the_publish_transaction(catalog):
    serving = published(catalog, identity("run-prod"))
    spec = spec_of(GRAPH, "2022-10-31", assets=ASSET, first=KEY, last=KEY, requested_by="tester")
    ledger = Ledger(catalog)
    request_id = ledger.create("req-20221101-0c0c0c0c", spec, "git-abc123", spec.excluded_cells(GRAPH)).request_id
    late = begin_verified(catalog, identity("run-late", request_id=request_id))
    ledger.cancel(request_id)

    with pytest.raises(PublishConflict, match=f"request {request_id} was cancelled"):
        catalog.publish(late, PASSED)
    assert catalog.current(ASSET, KEY).version_id == serving and state(catalog, late) == S.VERIFYING.value

    # An open request's versions publish as before.
    other = ledger.create("req-20221101-0d0d0d0d", spec, "git-abc123", spec.excluded_cells(GRAPH)).request_id
    assert catalog.publish(begin_verified(catalog, identity("run-ok", request_id=other)), PASSED).version_id


# ---- the publish log --------------------------------------------------------------------------------------------


def test_log_after_returns_every_move_after_the_cursor_in_seq_order(catalog):
    expected = []
    for i, key in enumerate(["2022-10-03", "2022-10-01", "2022-10-02", "2022-10-01"]):
        version_id = published(catalog, identity(f"run-{i}", key=key))
        expected.append((ACTION_PUBLISH, version_id))
    daily = published(catalog, identity("run-d", asset="daily_revenue"))
    expected.append((ACTION_PUBLISH, daily))
    back = catalog.rollback(ASSET, "2022-10-01", reason="bad")
    expected.append((ACTION_ROLLBACK, back.version_id))

    log = catalog.log_after(0)
    assert [r["seq"] for r in log] == [1, 2, 3, 4, 5, 6]
    assert [(r["action"], r["version_id"]) for r in log] == expected
    assert [r["seq"] for r in catalog.log_after(4)] == [5, 6]
    assert [r["seq"] for r in catalog.log_after(0, limit=2)] == [1, 2]
    assert [r["seq"] for r in catalog.log_after(2, limit=2)] == [3, 4]
    assert catalog.log_after(6) == []
    assert [r["at"] for r in log] == sorted(r["at"] for r in log)
