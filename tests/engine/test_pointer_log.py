"""The publish log read as pointer moves (what the published tables apply), on SQLite and PostgreSQL."""

from __future__ import annotations

from backfill_assets.engine.store.pointer_log import current_pointers, pointer_changes

from .catalog_helpers import ASSET, KEY, identity, published


def test_a_repair_of_a_superseded_version_moves_no_day_back(catalog):
    """``reconcile --repair`` logs a row (action ``repair``) for a version published without its Dagster event,
    even one replaced since: the pointer does not move, so neither may a table that applies the log."""
    crashed = published(catalog, identity("run-crashed"))
    serving = published(catalog, identity("run-rerun"))  # supersedes it
    table_position = pointer_changes(catalog, ASSET, 0).seq

    repair_seq = catalog.record_repair(crashed, "materialization recorded by reconcile --repair")

    assert current_pointers(catalog, ASSET)[1][KEY].version_id == serving
    after = pointer_changes(catalog, ASSET, table_position)
    assert after.empty and after.seq == repair_seq  # looked past the repair, nothing to switch
    assert pointer_changes(catalog, ASSET, 0).days[KEY].version_id == serving
