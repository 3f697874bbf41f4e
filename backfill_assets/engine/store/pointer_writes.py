"""The steps of a pointer move inside the caller's transaction, shared by publish (``Catalog``), rollback
(``Rollbacks``) and an operator's overrides (``OverrideLog``): the in-transaction switches, the publish
compare-and-swap, state transitions, the pointer swap and the ``publish_log`` row. A base class rather than
methods of ``Catalog``, so the mixins that move pointers inherit them instead of re-declaring them."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from backfill_assets.engine.model.errors import PublishConflict
from backfill_assets.engine.model.request_model import RequestStatus
from backfill_assets.engine.model.states import VersionState, check_transition
from backfill_assets.engine.store.catalog_queries import ACTION_PUBLISH, CatalogQueries
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.pointer_switches import InTransactionSwitch, run_switches
from backfill_assets.engine.store.schema import log_head, pointers, publish_log, requests, versions

# Built once, their values bound at execution (``catalog_queries.VERSION_BY_ID`` says why). An update's SET columns
# are the names it is executed with that are not its ``b_`` parameters.
TRANSITION = versions.update().where(
    versions.c.version_id == sa.bindparam("b_version_id"), versions.c.state == sa.bindparam("b_state")
)
SWAP_POINTER = pointers.update().where(
    pointers.c.asset == sa.bindparam("b_asset"),
    pointers.c.partition_key == sa.bindparam("b_partition"),
    pointers.c.version_id == sa.bindparam("b_expected"),
)
NEXT_SEQ = log_head.update().where(log_head.c.id == 1).values(seq=log_head.c.seq + 1).returning(log_head.c.seq)
INSERT_LOG = publish_log.insert()
INSERT_POINTER = pointers.insert()
# FOR SHARE on PostgreSQL; SQLite serializes writers anyway.
REQUEST_STATUS_SHARED = (
    sa.select(requests.c.status).where(requests.c.request_id == sa.bindparam("b_request_id")).with_for_update(read=True)
)


class PointerWrites(CatalogQueries):
    """The writing steps every pointer move takes, in the caller's transaction."""

    # Switched inside every pointer move's transaction, before its CAS (``pointer_switches``); PostgreSQL only.
    in_transaction_switches: list[InTransactionSwitch]

    def _switch_in_transaction(self, conn: Connection, version: Version, action: str) -> None:
        run_switches(conn, self.in_transaction_switches, version, action)


    def _cas_publish(
        self,
        conn: Connection,
        version: Version,
        current: str | None,
        now: str,
        *,
        override: bool = False,
        reason: str | None = None,
        **values: Any,
    ) -> int:
        """The publish compare-and-swap inside the caller's transaction; returns its publish_log seq.
        ``current``: the pointer's version as read in this transaction. ``override``: an operator's accept of a
        REJECTED version (the same swap, state change and log row; the log row carries ``reason``)."""
        expected = version.expected_previous_version_id
        if current == expected:  # first, before any lock of this transaction (pointer_switches)
            self._switch_in_transaction(conn, version, ACTION_PUBLISH)
        self._refuse_if_request_cancelled(conn, version, current)
        if current != expected:
            raise PublishConflict(
                f"lost the publish race to {current} (expected current {expected or 'none'})", current
            )
        # Conditional on the expected version: a racer that committed first makes this match nothing.
        self._swap_pointer(conn, version.asset, version.partition_key, expected, version.version_id, now)
        # States already read (the version above; the pointer's target is PUBLISHED): each transition
        # is one conditional UPDATE, which fails the publish if the state moved meanwhile.
        self._transition(
            conn,
            version.version_id,
            VersionState.PUBLISHED,
            from_state=version.state,
            override=override,
            published_at=now,
            **values,
        )
        if expected is not None:
            self._transition(conn, expected, VersionState.SUPERSEDED, from_state=VersionState.PUBLISHED)
        # Everything before this line holds only this partition's rows; log_head orders every publish,
        # so it is taken last and held for one UPDATE ... RETURNING, one INSERT and the commit.
        seq = self._next_seq(conn)
        self._log(conn, seq, version, expected, ACTION_PUBLISH, now, version.request_id, version.lane, reason)
        return seq




    @staticmethod
    def _refuse_if_request_cancelled(conn: Connection, version: Version, current: str | None) -> None:
        """A cancelled request publishes nothing, decided inside the publish transaction.

        ``request cancel`` may mark a run cancelled without its worker's confirmation (its code server did not
        answer); the step re-reads its run's status before publishing, but only this check, under a share lock on
        the request row that ``cancel`` must wait for, leaves no window: either the cancel commits first and the
        publish is refused, or the publish commits first and the cancel sees the cell published.
        """
        if not version.request_id:
            return
        status = conn.execute(REQUEST_STATUS_SHARED, {"b_request_id": version.request_id}).scalar()
        if status == RequestStatus.CANCELLED:
            raise PublishConflict(f"request {version.request_id} was cancelled: none of its versions publish", current)

    @staticmethod
    def _next_seq(conn: Connection) -> int:
        return int(conn.execute(NEXT_SEQ).scalar_one())

    def _transition(
        self,
        conn: Connection,
        version_id: str,
        target: VersionState,
        from_state: VersionState | str | None = None,
        override: bool = False,
        **values: Any,
    ) -> None:
        """Move one version to ``target`` if it is still in ``from_state`` (read now when not given); ``override``
        also allows an operator's override edges (states.OVERRIDE_ALLOWED)."""
        state = VersionState(from_state).value if from_state is not None else self._get(conn, version_id).state
        check_transition(version_id, state, target, override=override)
        result = conn.execute(
            TRANSITION, {**values, "state": target.value, "b_version_id": version_id, "b_state": state}
        )
        if result.rowcount != 1:
            raise PublishConflict(f"version {version_id} changed state concurrently", None)

    @staticmethod
    def _swap_pointer(
        conn: Connection, asset: str, key: str, expected: str | None, new: str, now: str | None
    ) -> None:
        if expected is None:
            conn.execute(
                INSERT_POINTER,
                {"asset": asset, "partition_key": key, "version_id": new, "previous_version_id": None,
                 "updated_at": now},
            )
            return
        result = conn.execute(
            SWAP_POINTER,
            {"version_id": new, "previous_version_id": expected, "updated_at": now,
             "b_asset": asset, "b_partition": key, "b_expected": expected},
        )
        if result.rowcount != 1:
            # Another transaction moved the pointer after we read it; name the version that won.
            now_current = conn.execute(
                sa.select(pointers.c.version_id).where(pointers.c.asset == asset, pointers.c.partition_key == key)
            ).scalar()
            raise PublishConflict(
                f"lost the publish race to {now_current} (expected current {expected})", now_current
            )

    @staticmethod
    def _log(
        conn: Connection,
        seq: int,
        version: Version,
        previous: str | None,
        action: str,
        now: str | None,
        request_id: str | None,
        lane: str | None,
        reason: str | None = None,
    ) -> None:
        conn.execute(
            INSERT_LOG,
            {
                "seq": seq,
                "asset": version.asset,
                "partition_key": version.partition_key,
                "version_id": version.version_id,
                "previous_version_id": previous,
                "action": action,
                "request_id": request_id,
                "lane": lane,
                "reason": reason,
                "at": now,
            },
        )

