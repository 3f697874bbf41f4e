"""The shipped event logs (SQLite in dagster.yaml, PostgreSQL in deploy/) give a pool slot freed while a step
registered for it to that step; Dagster's own leave the step waiting with the slot free."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import sqlalchemy as sa
import yaml

from backfill_assets.engine.model.settings import PACKAGE_DIR
from backfill_assets.integration.runs.dagster_adapter import AssignsFreedPoolSlots
from tests.homes import shipped_storage

DAGSTER_DEFAULT = {"telemetry": {"enabled": False}}
DEPLOY_POSTGRES = PACKAGE_DIR.parent / "deploy" / "postgres" / "dagster.yaml"
POOL = "extract"


def _home(path: Path, config: dict) -> str:
    path.mkdir(parents=True, exist_ok=True)
    (path / "dagster.yaml").write_text(yaml.safe_dump(config))
    return str(path)


def _storage_blocks(path: Path) -> dict:
    config = yaml.safe_load(path.read_text())
    return {k: v for k, v in config.items() if k.endswith("storage") or k == "storage"}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def shipped(request, tmp_path, monkeypatch):
    """A home with the event log the project ships for that storage (its dagster.yaml's storage blocks)."""
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")
        name = server.create_database()
        monkeypatch.setenv("DAGSTER_PG_URL", server.url_for(name))
        yield _home(tmp_path / "pg", _storage_blocks(DEPLOY_POSTGRES))
        server.drop_database(name)
    else:
        yield _home(tmp_path / "sqlite", shipped_storage())


def _pool_of_one_freed_while_a_step_registers(instance: dg.DagsterInstance) -> tuple[str, str, str]:
    """The end state of Dagster's race: run A held the pool's one slot; run B's step saw none free, A freed it
    (no step was pending, none assigned), and B's step then registered as pending, unassigned."""
    storage = instance.event_log_storage
    storage.set_concurrency_slots(POOL, 1)
    assert storage.claim_concurrency_slot(POOL, "run-a", "raw_orders").is_claimed
    assert not storage.has_unassigned_slots(POOL)  # what B's step saw
    storage.free_concurrency_slot_for_step("run-a", "raw_orders")
    storage.add_pending_step(POOL, "run-b", "raw_orders", should_assign=False)  # what it then did
    return POOL, "run-b", "raw_orders"


def test_a_pool_slot_freed_while_a_step_registered_for_it_is_claimed_by_that_step(shipped):
    with dg.DagsterInstance.from_config(shipped) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, AssignsFreedPoolSlots)
        claim = _pool_of_one_freed_while_a_step_registers(instance)
        assert storage.claim_concurrency_slot(*claim).is_claimed
        info = storage.get_concurrency_info(POOL)
        assert (info.active_slot_count, info.pending_step_count, info.active_run_ids) == (1, 0, {"run-b"})
        # Still one slot: another run's step waits for it, and gets it once run B frees it.
        assert not storage.claim_concurrency_slot(POOL, "run-c", "raw_orders").is_claimed
        storage.free_concurrency_slot_for_step("run-b", "raw_orders")
        assert storage.claim_concurrency_slot(POOL, "run-c", "raw_orders").is_claimed


def test_dagsters_own_event_log_leaves_that_step_waiting(tmp_path):
    # Why the shipped classes assign freed slots: with Dagster's, the step never gets the free slot (if this starts
    # failing, Dagster fixed the race and AssignsFreedPoolSlots can go).
    with dg.DagsterInstance.from_config(_home(tmp_path / "dagster", DAGSTER_DEFAULT)) as instance:
        claim = _pool_of_one_freed_while_a_step_registers(instance)
        for _ in range(3):
            assert not instance.event_log_storage.claim_concurrency_slot(*claim).is_claimed
        assert instance.event_log_storage.get_concurrency_info(POOL).active_slot_count == 0


def test_two_steps_that_see_the_same_free_slot_never_both_take_it_on_sqlite(tmp_path):
    """Dagster's claim reads a free slot row, then writes that row whatever it holds by then (safe on PostgreSQL
    with FOR UPDATE SKIP LOCKED; SQLite has no row locks). Here the other step takes the slot just before this
    step writes its claim: at most one of them holds it."""
    home = _home(tmp_path / "sqlite", shipped_storage())
    with dg.DagsterInstance.from_config(home) as mine, dg.DagsterInstance.from_config(home) as other:
        mine.event_log_storage.set_concurrency_slots(POOL, 1)
        theirs: list = []

        def other_takes_the_slot(conn, cursor, statement, *_):
            if not theirs and statement.lstrip().upper().startswith("UPDATE CONCURRENCY_SLOTS"):
                theirs.append(other.event_log_storage._claim_concurrency_slot(POOL, "run-b", "raw_orders"))

        storage = mine.event_log_storage
        engine = storage._engines.get(storage.conn_string_for_shard("index"))
        sa.event.listen(engine, "before_cursor_execute", other_takes_the_slot)
        try:
            status = storage._claim_concurrency_slot(POOL, "run-a", "raw_orders")
        finally:
            sa.event.remove(engine, "before_cursor_execute", other_takes_the_slot)
        claimed = [s for s in (status, *theirs) if s.name == "CLAIMED"]
        holders = {(s.run_id, s.step_key) for s in storage.get_concurrency_info(POOL).claimed_slots}
        assert len(claimed) == 1 and len(holders) == 1, (status, theirs, holders)
