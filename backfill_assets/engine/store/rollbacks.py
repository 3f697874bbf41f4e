"""Rollback: move a partition's pointer back to a verified version, in one transaction with the state changes and
a ``publish_log`` row (action ``rollback``), taking the pointer row first and ``log_head`` last, as a publish does.
Its transaction steps (``_swap_pointer``, ``_transition``, ``_next_seq``, ``_log``, ``_switch_in_transaction``) are
``PointerWrites``', its queries (``_pointer``, ``_rollback_target``, ``_consumers``) ``CatalogQueries``'."""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from backfill_assets.engine.model.errors import InvalidField, NotFound, PublishConflict
from backfill_assets.engine.model.identity import validate_asset_name, validate_partition_key, validate_text
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog_queries import ACTION_ROLLBACK
from backfill_assets.engine.store.catalog_records import PointerMove, Version
from backfill_assets.engine.store.pointer_writes import PointerWrites
from backfill_assets.engine.store.transactions import begin, read


class Rollbacks(PointerWrites):
    """``rollback`` and what reads its target; mixed into ``Catalog``."""

    def rollback(
        self, asset: str, partition_key: str, reason: str, to_version_id: str | None = None
    ) -> PointerMove:
        validate_asset_name(asset)
        validate_partition_key(partition_key)
        if not reason or not reason.strip():
            raise InvalidField("rollback needs {reason}")
        validate_text(reason, "{reason}", 2000, line_breaks=True)
        with begin(self.engine) as conn:
            return self._roll_back(conn, asset, partition_key, reason, to_version_id)

    def _roll_back(
        self,
        conn: Connection,
        asset: str,
        partition_key: str,
        reason: str,
        to_version_id: str | None,
        *,
        bad_version_id: str | None = None,
        bad_state: VersionState = VersionState.ROLLED_BACK,
        now: str | None = None,
        **bad_values: Any,
    ) -> PointerMove:
        """The rollback inside the caller's transaction. ``bad_version_id``: the version the caller judged current
        (refused if the pointer moved since). ``bad_state``: REJECTED for an operator's reject (an override edge:
        the bad version is then no rollback target ever again), with ``bad_values`` stored on it."""
        ptr = self._pointer(conn, asset, partition_key)
        if ptr is None:
            raise NotFound(f"{asset} {partition_key} has no published version to roll back")
        bad = ptr["version_id"]
        if bad_version_id is not None and bad != bad_version_id:
            raise PublishConflict(f"{asset} {partition_key}: the pointer moved to {bad} meanwhile; nothing changed",
                                  bad)
        target = self._rollback_target(conn, asset, partition_key, bad, to_version_id)
        # Before the pointer row's lock (pointer_switches): the published table switches with this move.
        self._switch_in_transaction(conn, target, ACTION_ROLLBACK)
        now = now or iso(utc_now())
        self._swap_pointer(conn, asset, partition_key, bad, target.version_id, now)
        override = bad_state is not VersionState.ROLLED_BACK
        self._transition(conn, bad, bad_state, override=override, **bad_values)
        # published_at stays the original publish time: a version keeps its history, and the restore is
        # its own publish_log row (action rollback) with its own time.
        self._transition(conn, target.version_id, VersionState.PUBLISHED)
        # Lock order as in publish: pointer row first, log_head last (no deadlock between the two).
        seq = self._next_seq(conn)
        self._log(conn, seq, target, bad, ACTION_ROLLBACK, now, None, None, reason=reason)
        consumers = self._consumers(conn, bad)
        return PointerMove(seq, asset, partition_key, target.version_id, bad, ACTION_ROLLBACK, consumers)

    def rollback_target(self, asset: str, partition_key: str) -> Version | None:
        """The version a rollback of the current pointer would restore (gc must never purge it)."""
        with read(self.reader, self.engine) as conn:
            ptr = self._pointer(conn, asset, partition_key)
            if ptr is None:
                return None
            try:
                return self._rollback_target(conn, asset, partition_key, ptr["version_id"], None)
            except NotFound:
                return None
