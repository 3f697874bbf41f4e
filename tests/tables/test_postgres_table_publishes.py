"""The PostgreSQL published table beside a catalog on the same database: a publish (or rollback) switches its day in
its own transaction, a lost compare-and-swap or a table that cannot be had leaves the table as it was, and readers
and a second syncer never see a day empty or twice. A real PostgreSQL server; this module's own database."""

from __future__ import annotations

import threading
import time

import psycopg2
import pytest

from backfill_assets.engine.model.errors import PublishConflict
from backfill_assets.engine.store import pg_tables
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.transactions import atomic
from backfill_assets.engine.tables.published_tables import PublishedTables
from backfill_assets.engine.wap.audit import CheckOutcome
from backfill_assets.engine.wap.faults import ENV_HOLD, IN_PUBLISH_TRANSACTION
from backfill_assets.engine.wap.gate import Gate
from tests.engine.catalog_helpers import ASSET, identity, run_racers
from tests.orders import GRAPH
from tests.tables.pg_table_helpers import (
    D1,
    D2,
    D3,
    DAYS,
    days_of,
    frame_of,
    pointers_of,
    published,
    race_sync,
    rejected,
    sql,
    written,
)

pytestmark = pytest.mark.postgres


# ---- the catalog on the same database: the publish switches its day ---------------------------------------------


def test_a_publish_switches_its_day_in_its_own_transaction(pg_url, pg_catalog, warehouse, tables):
    asset = "t_same_db"
    for day in DAYS:
        published(pg_catalog, warehouse, asset, day, "run-a")
    assert days_of(pg_url, asset) == {D1: (3, "run-a"), D2: (3, "run-a"), D3: (3, "run-a")}  # no sync called

    version = written(pg_catalog, warehouse, asset, D2, "run-b", rows=5)
    tables.prepare(version)  # what the gate does once the checks passed: the publish then only attaches
    pg_catalog.publish(version.version_id, [])
    assert days_of(pg_url, asset)[D2] == (5, "run-b")

    pg_catalog.rollback(asset, D2, "bad numbers")
    assert days_of(pg_url, asset)[D2] == (3, "run-a")

    refused = rejected(pg_catalog, warehouse, asset, D3, "run-c", rows=2)
    assert days_of(pg_url, asset)[D3] == (3, "run-a")
    pg_catalog.accept_version(refused.version_id, "ops", "the check was wrong")  # an operator's accept
    assert days_of(pg_url, asset)[D3] == (2, "run-c")

    assert tables.lag(pg_catalog, asset).in_line
    assert {r[0] for r in sql(pg_url, "SELECT switched_by FROM published._serving WHERE asset = %s", asset)} == {
        "publish", "rollback"}


def test_a_publish_that_loses_its_compare_and_swap_leaves_the_table_unchanged(
    pg_url, pg_catalog, warehouse, tables, tmp_path, monkeypatch
):
    """Two first publishes of one day: the winner is held inside its transaction (its day switched, its pointer
    moved, not committed); the loser passes its pre-check, then waits for the asset's lock. Released, the winner
    commits; the loser switches the day to its own version, then loses the pointer's compare-and-swap, and the
    rollback of its transaction takes its switch back."""
    asset = "t_lost_cas"
    winner = written(pg_catalog, warehouse, asset, D1, "run-win")
    loser = written(pg_catalog, warehouse, asset, D1, "run-lose", rows=8)
    tables.prepare(loser)
    tables.switch_lock_timeout = 120.0  # the loser waits for the winner, however slow the machine
    hold = tmp_path / "hold"
    hold.write_text("held")
    monkeypatch.setenv(ENV_HOLD, f"{IN_PUBLISH_TRANSACTION}={hold}")
    outcomes: dict[str, object] = {}

    def publish(name, version):
        try:
            outcomes[name] = pg_catalog.publish(version.version_id, [])
        except Exception as exc:  # noqa: BLE001 - the test asserts what each got
            outcomes[name] = exc

    first = threading.Thread(target=publish, args=("winner", winner))
    first.start()
    _await(lambda: _waiting_in_hold(pg_url), "the winner held in its publish transaction")
    second = threading.Thread(target=publish, args=("loser", loser))
    second.start()
    _await(lambda: _waiting_for_advisory_lock(pg_url), "the loser waiting for the asset's lock")
    hold.unlink()
    first.join(60)
    second.join(60)

    assert isinstance(outcomes["loser"], PublishConflict)
    assert not isinstance(outcomes["winner"], Exception)
    assert days_of(pg_url, asset) == {D1: (3, "run-win")}
    assert tables.serving(asset) == {D1: winner.version_id}
    assert tables.lag(pg_catalog, asset).in_line


def test_a_switch_that_cannot_get_the_table_leaves_the_publish_to_commit(
    pg_url, pg_catalog, warehouse, tables, caplog
):
    """A reader holding the table (an open transaction that read it) does not stop a publish: its switch gives
    up after its lock timeout, the publish commits, a sync meanwhile is reported as failed, and the sync after
    the reader is done switches the day."""
    asset = "t_busy"
    published(pg_catalog, warehouse, asset, D1, "run-a")
    tables.switch_lock_timeout = tables.sync_lock_timeout = 0.2
    reader = psycopg2.connect(pg_url)
    try:
        with reader.cursor() as cur:
            cur.execute(f'SELECT count(*) FROM published."{asset}"')  # its transaction stays open
        published(pg_catalog, warehouse, asset, D1, "run-b", rows=5)
        assert "a lock was still held after 0.2 s" in caplog.text
        assert tables.lag(pg_catalog, asset).days_behind == (D1,)
        report = PublishedTables(tables.settings, [tables]).sync(pg_catalog, [asset])
        assert [table for table, _ in report.failed] == [f"published.{asset}"]
        assert "syncing published.t_busy: a lock was still held after 0.2 s" in report.failed[0][1]
    finally:
        reader.rollback()
        reader.close()
    assert days_of(pg_url, asset) == {D1: (3, "run-a")}
    assert tables.sync(pg_catalog, asset).days == (D1,)
    assert days_of(pg_url, asset) == {D1: (5, "run-b")}


def test_later_moves_of_one_transaction_switch_only_what_needs_no_wait(pg_url, pg_catalog, warehouse, tables):
    """Three rollbacks in one operation's transaction: the first switches as a publish does; the later ones run
    in a transaction holding catalog locks, so they switch only what is loaded and free (D3), never load (D2's
    old table is gone) and leave the rest to the next sync."""
    asset = "t_multi"
    first = {day: published(pg_catalog, warehouse, asset, day, f"run-a-{day}") for day in DAYS}
    for day in DAYS:
        published(pg_catalog, warehouse, asset, day, f"run-b-{day}", rows=5)
    sql(pg_url, f'DROP TABLE published."{pg_tables.version_table_name(first[D2])}"')

    with atomic(pg_catalog.engine):
        for day in DAYS:
            pg_catalog.rollback(asset, day, "the b runs were wrong")

    assert days_of(pg_url, asset) == {D1: (3, f"run-a-{D1}"), D2: (5, f"run-b-{D2}"), D3: (3, f"run-a-{D3}")}
    assert tables.lag(pg_catalog, asset).days_behind == (D2,)
    assert tables.sync(pg_catalog, asset).days == (D2,)
    assert days_of(pg_url, asset) == {day: (3, f"run-a-{day}") for day in DAYS}


def test_the_gate_prepares_a_version_before_it_publishes(pg_url, pg_catalog, warehouse, tables):
    """The gate's ``before_publish`` loads a version that passed its checks before the publish, which then only
    attaches it; a rejected version is never prepared."""
    seen: list[tuple[str, object]] = []

    def prepare(version):
        seen.append((tables.prepare(version), pg_catalog.current(ASSET, D1)))

    def gate_of(run: str, passed: bool):
        gate = Gate(pg_catalog, warehouse, GRAPH[ASSET], identity(run, key=D1), before_publish=[prepare])
        gate.begin()
        directory = warehouse.version_dir(ASSET, D1, run, gate.attempt_no)
        w = warehouse.write(directory, frame_of(run, 4), gate.labels(), {"version_id": gate.version_id}, day=D1)
        gate.version = pg_catalog.mark_verifying(gate.version_id, path=w.path, rows=w.rows, sha256=w.sha256,
                                                 manifest_sha256=w.manifest_sha256, stats=w.stats, input_versions={})
        return gate.conclude([CheckOutcome("row_count", passed, "")])

    outcome = gate_of("run-a", True)
    assert outcome.published and seen == [(pg_tables.version_table_name(outcome.version), None)]
    assert days_of(pg_url, ASSET) == {D1: (4, "run-a")}
    assert not gate_of("run-bad", False).published
    assert len(seen) == 1 and days_of(pg_url, ASSET) == {D1: (4, "run-a")}


# ---- concurrency ---------------------------------------------------------------------------------------------------


def test_a_concurrent_reader_never_sees_a_day_empty_or_two_versions_of_it(pg_url, pg_catalog, warehouse, tables):
    """A reader querying the table in a loop while days are republished, switched by the publishes themselves
    (same database) and by syncs of a catalog that does not switch: every read shows each day that ever had rows,
    with the rows of exactly one version, all of them."""
    asset = "t_reader"
    rows_of: dict[str, int] = {}
    plain = Catalog(pg_url)  # not joined: its publishes leave the switch to the sync
    for day in DAYS:
        published(pg_catalog, warehouse, asset, day, "r0-" + day, rows=10)
        rows_of["r0-" + day] = 10
    reads = _Reader(pg_url, asset, rows_of)
    reads.start()
    try:
        for i in range(1, 9):
            catalog = pg_catalog if i % 2 else plain
            for day in DAYS:
                run = f"r{i}-{day}"
                rows_of[run] = 10 + i
                published(catalog, warehouse, asset, day, run, rows=10 + i)
            if catalog is plain:
                assert tables.sync(plain, asset).days == tuple(DAYS)
            reads.await_next_read()
    finally:
        reads.stop()
    assert reads.violations == []
    assert reads.count >= 8
    assert days_of(pg_url, asset) == {day: (18, f"r8-{day}") for day in DAYS}


def test_two_syncers_in_two_processes_switch_each_day_once(pg_url, tmp_path, sqlite_catalog, warehouse, tables):
    """The table holds D1 of run-a; then D1 is republished and D2, D3 published: two processes sync at once, and
    between them each day is switched exactly once (D1 detached and attached, D2 and D3 attached)."""
    asset = "t_race"
    published(sqlite_catalog, warehouse, asset, D1, "run-a")
    tables.sync(sqlite_catalog, asset)
    published(sqlite_catalog, warehouse, asset, D1, "run-b", rows=4)
    for day in (D2, D3):
        published(sqlite_catalog, warehouse, asset, day, "run-a")

    results = run_racers(race_sync, [(f"sqlite:///{tmp_path}/catalog.db", pg_url, str(warehouse.root), asset)] * 2)

    assert sorted(day for _, found, _ in results for day in found) == DAYS
    assert tables.serving(asset) == pointers_of(sqlite_catalog, asset, DAYS)
    assert days_of(pg_url, asset) == {D1: (4, "run-b"), D2: (3, "run-a"), D3: (3, "run-a")}


# ---- helpers -------------------------------------------------------------------------------------------------------


class _Reader:
    """A thread with its own connection reading the table in a loop, recording what no read may show."""

    def __init__(self, pg_url: str, asset: str, rows_of: dict[str, int]):
        self.conn = psycopg2.connect(pg_url)
        self.conn.autocommit = True
        self.asset, self.rows_of = asset, rows_of
        self.violations: list[str] = []
        self.count = 0
        self.seen_days: set[str] = set()
        self._stop = threading.Event()
        self._read = threading.Condition()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.conn.close()

    def await_next_read(self) -> None:
        """Until a read that began after this call has finished."""
        with self._read:
            target = self.count + 2
            assert self._read.wait_for(lambda: self.count >= target or self._stop.is_set(), 60)

    def _loop(self) -> None:
        query = (f'SELECT partition_date, count(*), string_agg(DISTINCT marker, \',\') FROM published."{self.asset}" '
                 "GROUP BY 1")
        with self.conn.cursor() as cur:
            while not self._stop.is_set():
                cur.execute(query)
                self._check({d.isoformat(): (n, m) for d, n, m in cur.fetchall()})
                with self._read:
                    self.count += 1
                    self._read.notify_all()

    def _check(self, days: dict[str, tuple[int, str]]) -> None:
        for day in self.seen_days - set(days):
            self.violations.append(f"read {self.count}: {day} had rows and has none")
        for day, (n, markers) in days.items():
            if "," in markers:
                self.violations.append(f"read {self.count}: {day} shows two versions {markers}")
            elif n != self.rows_of.get(markers):
                self.violations.append(f"read {self.count}: {day} has {n} rows of {markers}")
        self.seen_days |= set(days)


def _await(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def _waiting_for_advisory_lock(pg_url: str) -> bool:
    return bool(sql(pg_url, "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                             "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"))


def _waiting_in_hold(pg_url: str) -> bool:
    """A session idle in a transaction that holds the log_head row (a publish between its function and its
    commit)."""
    return bool(sql(pg_url, "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
                             "AND state = 'idle in transaction' AND query LIKE '%backfill_publish_%'"))
