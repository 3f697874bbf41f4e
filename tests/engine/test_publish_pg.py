"""Publish on PostgreSQL runs as one server-side function (``publish_pg``): what only that path can show — a
state moving under the function rolls its pointer swap back, a catalog made before the function gets it, and a
cursor reader polling while 8 processes publish never sees a gap or a sequence number out of order."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from backfill_assets.engine.model.errors import PublishConflict
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store import db, publish_pg
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import versions
from tests.conftest import fresh_pg_database

from .catalog_helpers import ASSET, KEY, PASSED, begin_verified, identity, published, race_publish_partition, snapshot
from .test_catalog_races import run_racers

pytestmark = pytest.mark.postgres
S = VersionState


@pytest.fixture
def pg_url(pg_server):
    with fresh_pg_database(pg_server) as url:
        yield url


def _wait_until_blocked(catalog: Catalog, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    with catalog.engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'"
                )
            ).scalar()
            if waiting:
                return
            # PostgreSQL reads pg_stat_activity once per transaction: end it, or every poll sees the first one's
            # sessions (the publish not yet connected) and this waits out its deadline.
            conn.rollback()
            time.sleep(0.02)
        activity = conn.execute(
            sa.text("SELECT pid, state, wait_event_type, wait_event, left(query, 120) FROM pg_stat_activity "
                    "WHERE datname = current_database()")
        ).all()
    pytest.fail(f"the publish never waited on the version row lock; sessions: {activity}")


def test_a_state_moved_under_the_publish_function_rolls_back_its_pointer_swap(pg_url):
    catalog = Catalog(pg_url)
    serving = published(catalog, identity("run-a"))
    racing = begin_verified(catalog, identity("run-b"))
    before = snapshot(catalog)

    # Another transaction abandons the version and holds its row until the publish is inside the function:
    # the function has read VERIFYING and swapped the pointer, then finds the state moved on its transition.
    other = catalog.engine.connect()
    txn = other.begin()
    other.execute(versions.update().where(versions.c.version_id == racing).values(state=S.ABANDONED.value))
    outcome: list[BaseException | object] = []

    def publish() -> None:
        try:
            outcome.append(catalog.publish(racing, PASSED))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            outcome.append(exc)

    thread = threading.Thread(target=publish)
    thread.start()
    try:
        _wait_until_blocked(catalog)
    finally:
        txn.commit()
        other.close()
        thread.join(30)

    [error] = outcome
    assert isinstance(error, PublishConflict) and f"version {racing} changed state concurrently" in str(error)
    after = snapshot(catalog)
    assert after["pointers"] == before["pointers"] and after["publish_log"] == before["publish_log"]
    assert after["log_head"] == before["log_head"]
    assert catalog.current(ASSET, KEY).version_id == serving
    assert catalog.get(racing).state == S.ABANDONED.value


def test_a_catalog_created_before_the_publish_function_gets_it_on_open(pg_url):
    catalog = Catalog(pg_url)
    with catalog.engine.begin() as conn:
        conn.exec_driver_sql(f"DROP FUNCTION {publish_pg.REGPROCEDURE}")
    db.dispose_all()

    catalog = Catalog(pg_url)
    assert catalog.publish(begin_verified(catalog, identity()), PASSED).seq == 1


def _read_log_while_publishing(url: str, stop: threading.Event, batches: list[list[int]]) -> None:
    catalog = Catalog(url)
    cursor = 0
    while True:
        done = stop.is_set()  # read once more after the publishers finished
        rows = catalog.log_after(cursor, limit=7)
        if rows:
            batches.append([r["seq"] for r in rows])
            cursor = rows[-1]["seq"]
        elif done:
            return


def test_a_cursor_reader_never_skips_a_publish_of_eight_concurrent_publishers(pg_url):
    Catalog(pg_url)  # the schema, before the racers open the catalog
    stop, batches = threading.Event(), []
    reader = threading.Thread(target=_read_log_while_publishing, args=(pg_url, stop, batches))
    reader.start()
    try:
        per_worker = 6
        # Each worker publishes its own partition, so all eight contend only for the log's order.
        run_racers(race_publish_partition, [(pg_url, w, per_worker, f"2022-10-{w + 1:02d}") for w in range(8)])
    finally:
        stop.set()
        reader.join(60)
    seen = [seq for batch in batches for seq in batch]
    # Every batch continued exactly where the cursor stood: a publish that committed after a higher sequence
    # number was read would show up here as a gap.
    assert seen == list(range(1, 8 * per_worker + 1)), batches
    assert len(batches) > 1
