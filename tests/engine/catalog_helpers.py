"""Helpers for the catalog tests, in their own module so spawned race processes can import them."""

from __future__ import annotations

import queue
import threading
from contextlib import contextmanager
from datetime import date
from typing import Any, Iterator

import pytest
import sqlalchemy as sa
from alembic import command

from backfill_assets.engine.model.errors import PublishConflict
from backfill_assets.engine.model.identity import RunIdentity, params_digest
from backfill_assets.engine.model.intervals import BusinessCalendar, iso, utc_now
from backfill_assets.engine.store import schema_version
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.schema import log_head, pointers, publish_log, reads, versions
from tests.forkserver import forkserver_context

CALENDAR = BusinessCalendar("Asia/Shanghai", date(2022, 9, 1))
ASSET = "order_facts"
KEY = "2022-10-01"


def as_before_versioning(conn: sa.Connection) -> None:
    """Make a catalog created at head look like one from before schema versions: the baseline's tables only (what
    later revisions added is taken away by their downgrades), and no version table."""
    command.downgrade(schema_version.alembic_config(conn), "0001")
    conn.exec_driver_sql(f"DROP TABLE {schema_version.VERSION_TABLE}")


def identity(run_id: str = "run-a", key: str = KEY, asset: str = ASSET, request_id: str | None = None) -> RunIdentity:
    return RunIdentity(
        asset=asset,
        interval=CALENDAR.interval(key),
        logical_run_id=run_id,
        dagster_run_id=run_id,
        request_id=request_id,
        code_version="git-abc123",
        params_digest=params_digest({}),
        lane="backfill",
        requested_at=None,
        started_at=iso(utc_now()),
    )


def begin_verified(catalog: Catalog, ident: RunIdentity) -> str:
    """A version that was written and is waiting for its checks (state VERIFYING)."""
    version = catalog.begin_version(ident)
    catalog.mark_verifying(
        version.version_id,
        path=f"/warehouse/{version.version_id}/data.parquet",
        rows=10,
        sha256="0" * 64,
        stats={"rows": 10},
        input_versions={},
    )
    return version.version_id


PASSED = [{"name": "row_count", "passed": True}]


def published(catalog: Catalog, ident: RunIdentity) -> str:
    version_id = begin_verified(catalog, ident)
    catalog.publish(version_id, PASSED)
    return version_id


def snapshot(catalog: Catalog) -> dict[str, list[dict[str, Any]]]:
    """Every row the catalog operations touch, to prove a refused operation changed nothing."""
    tables = {
        "versions": (versions, versions.c.version_id),
        "pointers": (pointers, pointers.c.partition_key),
        "publish_log": (publish_log, publish_log.c.seq),
        "log_head": (log_head, log_head.c.id),
        "reads": (reads, reads.c.id),
    }
    with catalog.engine.connect() as conn:
        return {
            name: [dict(r._mapping) for r in conn.execute(sa.select(table).order_by(order)).all()]
            for name, (table, order) in tables.items()
        }


def run_racers(target, per_process_args: list[tuple], timeout: float = 120.0) -> list[tuple]:
    """Start one process per argument tuple (forked from the tests' forkserver), sharing a barrier and a result
    queue."""
    ctx = forkserver_context()
    barrier = ctx.Barrier(len(per_process_args))
    results = ctx.Queue()
    processes = [ctx.Process(target=target, args=(*args, barrier, results)) for args in per_process_args]
    for process in processes:
        process.start()
    collected: list[tuple] = []
    try:
        for _ in processes:
            collected.append(results.get(timeout=timeout))
    except queue.Empty:
        pytest.fail(f"racers did not report within {timeout}s: got {collected}")
    finally:
        for process in processes:
            process.join(timeout=30)
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=5)
        results.close()
    errors = [r for r in collected if r[0] == "error"]
    assert errors == [], f"racers failed: {errors}"  # a helper module: pytest does not rewrite its asserts
    assert [p.exitcode for p in processes] == [0] * len(processes), [p.exitcode for p in processes]
    return collected


# ---- race workers (run in spawned processes) --------------------------------------------------------------------


def race_publish_once(url: str, run_id: str, barrier, results) -> None:
    """Begin and verify a version, wait until every racer has done the same, then publish at once."""
    try:
        catalog = Catalog(url)
        version_id = begin_verified(catalog, identity(run_id=run_id))
        barrier.wait(timeout=120)
        try:
            move = catalog.publish(version_id, PASSED)
        except PublishConflict as exc:
            results.put(("conflict", version_id, exc.current_version_id))
        else:
            results.put(("won", version_id, move.seq))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put(("error", run_id, f"{type(exc).__name__}: {exc}"))
        barrier.abort()


def race_publish_repeatedly(url: str, worker: int, publishes: int, barrier, results, key: str = KEY) -> None:
    """Publish ``publishes`` versions one after another; a lost race is rejected and retried as a new attempt."""
    try:
        catalog = Catalog(url)
        barrier.wait(timeout=120)
        wins: list[tuple[str, int, str | None]] = []
        conflicts = 0
        while len(wins) < publishes:
            version_id = begin_verified(catalog, identity(run_id=f"w{worker}-p{len(wins)}", key=key))
            try:
                move = catalog.publish(version_id, PASSED)
            except PublishConflict:
                catalog.reject(version_id, [], "lost the publish race")
                conflicts += 1
                if conflicts > 1000:
                    raise RuntimeError("starved: more than 1000 lost races") from None
            else:
                wins.append((version_id, move.seq, move.previous_version_id))
        results.put(("done", worker, wins, conflicts))
    except BaseException as exc:  # noqa: BLE001
        results.put(("error", worker, f"{type(exc).__name__}: {exc}"))
        barrier.abort()


def race_publish_partition(url: str, worker: int, publishes: int, key: str, barrier, results) -> None:
    """``race_publish_repeatedly`` on a partition of its own."""
    race_publish_repeatedly(url, worker, publishes, barrier, results, key=key)


def state(catalog: Catalog, version_id: str) -> str:
    return catalog.get(version_id).state


def pointer_row(catalog: Catalog, asset: str = ASSET, key: str = KEY) -> dict | None:
    rows = [p for p in snapshot(catalog)["pointers"] if (p["asset"], p["partition_key"]) == (asset, key)]
    return rows[0] if rows else None


def race_open(url: str, barrier, results) -> None:
    """Open the catalog the way every process does (``Catalog(url)``) at the same moment as the other racers."""
    try:
        barrier.wait(timeout=120)
        Catalog(url)
        results.put(("opened", url))
    except BaseException as exc:  # noqa: BLE001
        results.put(("error", url, f"{type(exc).__name__}: {exc}"))
        barrier.abort()


def race_upgrade(url: str, barrier, results) -> None:
    """Run the upgrade command's operation at the same moment as the other racers."""
    from backfill_assets.engine.store.catalog_upgrade import upgrade_catalog

    try:
        barrier.wait(timeout=120)
        results.put(("upgraded", upgrade_catalog(url).changed))
    except BaseException as exc:  # noqa: BLE001
        results.put(("error", url, f"{type(exc).__name__}: {exc}"))
        barrier.abort()


@contextmanager
def table_locked(url: str, table: str = "pointers") -> Iterator[None]:
    """Another session holds ``table`` under ACCESS EXCLUSIVE (PostgreSQL) until the block ends, as a SQL console
    with an open ``LOCK TABLE`` would."""
    holder = sa.create_engine(url, poolclass=sa.pool.NullPool)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.begin() as conn:
            conn.exec_driver_sql(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            held.set()
            release.wait(60)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        assert held.wait(10), "the lock was never taken"
        yield
    finally:
        release.set()
        thread.join(10)
        holder.dispose()
