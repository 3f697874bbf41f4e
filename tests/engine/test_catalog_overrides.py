"""An operator's overrides on SQLite and PostgreSQL: accept publishes a REJECTED version by the publish CAS, reject
rolls the current version back and marks it REJECTED, skip marks come and go — each with its ``overrides`` row in
the same transaction, and a refused one changes nothing."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from backfill_assets.engine.model.errors import IllegalTransition, PublishConflict
from backfill_assets.engine.model.overrides import OverrideAction
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog import ACTION_PUBLISH, ACTION_ROLLBACK
from backfill_assets.engine.store.schema import overrides

from .catalog_helpers import ASSET, KEY, begin_verified, identity, pointer_row, published, snapshot, state

S = VersionState


def rejected(catalog, run_id: str, request_id: str | None = "req-1") -> str:
    version_id = begin_verified(catalog, identity(run_id, request_id=request_id))
    catalog.reject(version_id, [{"name": "row_count", "passed": False}], "row_count failed")
    return version_id


def everything(catalog) -> dict:
    with catalog.engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(sa.select(overrides).order_by(overrides.c.id)).all()]
    return {**snapshot(catalog), "overrides": rows}


def test_accept_publishes_a_rejected_version_by_the_publish_cas_and_records_who_and_why(catalog):
    good = published(catalog, identity("run-good"))
    bad = rejected(catalog, "run-checked")

    move, record = catalog.accept_version(bad, "ana", "holiday: the low count is real")

    assert (move.version_id, move.previous_version_id, move.action) == (bad, good, ACTION_PUBLISH)
    assert (state(catalog, bad), state(catalog, good)) == (S.PUBLISHED.value, S.SUPERSEDED.value)
    assert pointer_row(catalog)["version_id"] == bad
    assert catalog.get(bad).published_at == record.at
    # An ordinary publish row of the version's request: what the propagation sensor and downstream react to.
    [row] = catalog.log_after(move.seq - 1)
    assert (row["action"], row["request_id"], row["version_id"], row["previous_version_id"]) == (
        ACTION_PUBLISH, "req-1", bad, good
    )
    assert row["reason"] == "accepted by ana: holiday: the low count is real"
    assert (record.action, record.version_id, record.decided_by, record.publish_seq) == (
        OverrideAction.ACCEPT, bad, "ana", move.seq
    )
    assert catalog.overrides_of_cell(ASSET, KEY) == [record]


def test_accept_of_the_first_version_of_a_day_creates_its_pointer(catalog):
    first = rejected(catalog, "run-first")
    move, _ = catalog.accept_version(first, "ana", "checked")
    assert move.previous_version_id is None and catalog.current(ASSET, KEY).version_id == first


def test_accept_is_refused_when_another_version_became_current_after_it_was_judged(catalog):
    published(catalog, identity("run-1"))
    judged = rejected(catalog, "run-2")
    newer = published(catalog, identity("run-3"))
    before = everything(catalog)
    with pytest.raises(PublishConflict, match=f"{newer} became current .* after it was judged"):
        catalog.accept_version(judged, "ana", "checked")
    assert everything(catalog) == before


def test_accept_is_refused_for_a_version_that_is_not_rejected(catalog):
    published(catalog, identity("run-1"))
    abandoned = catalog.begin_version(identity("run-2")).version_id
    catalog.abandon(abandoned, "worker died")
    before = everything(catalog)
    with pytest.raises(IllegalTransition, match="ABANDONED -> PUBLISHED"):
        catalog.accept_version(abandoned, "ana", "looks fine")
    assert everything(catalog) == before


def test_reject_restores_the_previous_version_and_the_rejected_one_is_never_restored_again(catalog):
    older = published(catalog, identity("run-0"))
    good = published(catalog, identity("run-good"))
    bad = published(catalog, identity("run-bad"))
    downstream = catalog.begin_version(identity("run-down", asset="daily_revenue"))
    catalog.record_reads(downstream.version_id, "run-down", [catalog.get(bad)])

    move, record = catalog.reject_current(ASSET, KEY, bad, good, "ben", "FX table was stale")

    assert (move.version_id, move.previous_version_id, move.action) == (good, bad, ACTION_ROLLBACK)
    assert [c.consumer_version_id for c in move.consumers_of_previous] == [downstream.version_id]
    assert (state(catalog, bad), state(catalog, good)) == (S.REJECTED.value, S.PUBLISHED.value)
    assert catalog.get(bad).error == "rejected after publish by ben: FX table was stale"
    assert catalog.log_after(move.seq - 1)[0]["reason"] == "rejected by ben: FX table was stale"
    assert (record.action, record.version_id, record.publish_seq) == (OverrideAction.REJECT, bad, move.seq)
    # The next rollback goes to the version before, never back to the rejected one.
    assert catalog.rollback_target(ASSET, KEY).version_id == older


def test_reject_is_refused_when_the_pointer_moved_since_it_was_judged(catalog):
    good = published(catalog, identity("run-good"))
    bad = published(catalog, identity("run-bad"))
    newest = published(catalog, identity("run-new"))
    before = everything(catalog)
    with pytest.raises(PublishConflict, match=f"moved to {newest}"):
        catalog.reject_current(ASSET, KEY, bad, good, "ben", "stale")
    assert everything(catalog) == before


def test_a_skip_mark_is_the_newest_skip_row_and_undo_keeps_both_rows(catalog):
    cells = [(ASSET, KEY), (ASSET, "2022-10-02")]
    catalog.mark_skipped(cells, "ops", "source outage")
    assert {c: m.reason for c, m in catalog.skip_marks(cells).items()} == dict.fromkeys(cells, "source outage")

    [withdrawn] = catalog.unmark_skipped([(ASSET, KEY), (ASSET, "2022-10-03")], "ops", "data arrived")
    assert (withdrawn.action, withdrawn.partition_key) == (OverrideAction.UNSKIP, KEY)
    assert set(catalog.skip_marks(cells)) == {(ASSET, "2022-10-02")}
    assert [o.action for o in catalog.overrides_of_cell(ASSET, KEY)] == [OverrideAction.SKIP, OverrideAction.UNSKIP]

    catalog.mark_skipped([(ASSET, KEY)], "lee", "not to be backfilled")
    assert catalog.skip_marks(cells)[(ASSET, KEY)].decided_by == "lee"
