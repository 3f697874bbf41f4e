"""The transactional catalog: versions, the current pointer per partition, the publish log and consumer reads.

Publish and rollback are compare-and-swap updates of ``pointers`` in one transaction with the ``versions`` state
changes and a ``publish_log`` row. Both take the single ``log_head`` row lock last, which orders them and makes
``publish_log.seq`` gapless and in commit order while holding the lock only for the log row and the commit.
On PostgreSQL a publish is one call of the function ``publish_pg`` creates (same steps, one round trip).
Registered in-transaction switches (``pointer_switches``: a published table on the same database) run inside a
publish, accept or rollback before its first lock, so they commit with the move or roll back with it.
The row types live in ``catalog_records``, the read queries in ``catalog_queries``, rollback in ``rollbacks``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, NoReturn

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from backfill_assets.engine.model.errors import NotFound, PublishConflict
from backfill_assets.engine.model.identity import (
    RunIdentity,
    canonical_json,
    make_version_id,
    parse_version_id,
)
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.settings import Settings
from backfill_assets.engine.model.states import IN_PROGRESS, VersionState, check_transition
from backfill_assets.engine.store import publish_pg
from backfill_assets.engine.store.asset_owners import claim_asset
from backfill_assets.engine.store.catalog_queries import ACTION_PUBLISH, ACTION_REPAIR, ACTION_ROLLBACK
from backfill_assets.engine.store.catalog_records import Consumer, PointerMove, Version
from backfill_assets.engine.store.db import engine_for, reader_for, retry_transient
from backfill_assets.engine.store.overrides import OverrideLog
from backfill_assets.engine.store.pointer_switches import InTransactionSwitch
from backfill_assets.engine.store.read_log import ReadLog
from backfill_assets.engine.store.schema import versions
from backfill_assets.engine.store.transactions import begin
from backfill_assets.engine.wap.faults import IN_PUBLISH_TRANSACTION, fault_point

# begin_version's statements, built once (``catalog_queries.VERSION_BY_ID`` says why).
_SAME_RUN_OF_CELL = (
    versions.c.asset == sa.bindparam("b_asset"),
    versions.c.partition_key == sa.bindparam("b_partition"),
    versions.c.run_id == sa.bindparam("b_run"),
)
LAST_ATTEMPT = sa.select(sa.func.max(versions.c.attempt_no)).where(*_SAME_RUN_OF_CELL)
ABANDON_EARLIER_ATTEMPTS = versions.update().where(
    *_SAME_RUN_OF_CELL, versions.c.state.in_([s.value for s in IN_PROGRESS])
)
INSERT_VERSION = versions.insert()

__all__ = ["ACTION_PUBLISH", "ACTION_REPAIR", "ACTION_ROLLBACK", "Catalog", "Consumer", "PointerMove", "Version"]



class Catalog(OverrideLog, ReadLog):
    """Writes; the reads it inherits from ``CatalogQueries``, the pointer moves' steps from ``PointerWrites``,
    rollbacks from ``Rollbacks``, an operator's overrides from ``OverrideLog``."""

    def __init__(self, url: str, warehouse_root: str | None = None):
        """``warehouse_root``: the warehouse this catalog describes; given, an empty or missing catalog beside a
        warehouse that holds versions is refused instead of created (``CatalogEmpty``)."""
        self.url = url
        self.engine = engine_for(url, warehouse_root)
        self.reader = reader_for(url)
        # Switched inside every pointer move's transaction, before its CAS (``pointer_switches``); PostgreSQL only.
        self.in_transaction_switches: list[InTransactionSwitch] = []
        # (asset, location) claims this catalog object saw held by the location: a claim is never released or
        # moved (asset_owners has no delete), so a later attempt of the same asset need not read it again.
        self._claims_held: set[tuple[str, str]] = set()

    def add_in_transaction_switch(self, switch: InTransactionSwitch) -> None:
        """Run ``switch`` inside every later publish, accept and rollback of this catalog, before the pointer's
        compare-and-swap, so it commits with the move or rolls back with it (``pointer_switches``)."""
        if switch not in self.in_transaction_switches:
            self.in_transaction_switches.append(switch)

    @classmethod
    def of_settings(cls, settings: Settings) -> Catalog:
        """The catalog the settings name, opened beside the warehouse they name: every process that may be the first
        to open it (CLI, service, resource, daemon) refuses to create it empty beside published versions."""
        return cls(settings.catalog_url, settings.warehouse_root)

    # ---- versions ---------------------------------------------------------------------------------------------

    def begin_version(self, identity: RunIdentity) -> Version:
        """Register a new attempt of ``identity`` in state WRITING.

        The catalog numbers attempts within a logical run, so a run re-execution and a step retry can never
        collide on one version id. The pointer seen now is remembered as the CAS expectation for publish.
        """

        if (identity.asset, identity.location) not in self._claims_held:
            claim_asset(self.engine, identity.asset, identity.location, iso(utc_now()))
            self._claims_held.add((identity.asset, identity.location))

        def txn() -> Version:
            with begin(self.engine) as conn:
                run_of_cell = {
                    "b_asset": identity.asset, "b_partition": identity.partition_key, "b_run": identity.logical_run_id
                }
                attempt_no = 1 + (conn.execute(LAST_ATTEMPT, run_of_cell).scalar() or 0)
                version_id = make_version_id(
                    identity.asset, identity.partition_key, identity.logical_run_id, attempt_no
                )
                expected = self._pointer(conn, identity.asset, identity.partition_key)
                now = iso(utc_now())
                # A new attempt of a logical run means its earlier attempts are over: one raised (and abandoned
                # itself), or its process died with it (a killed worker, whose step a broker redelivered). One
                # still in progress is abandoned here, so it reads as what it is and, should its process only
                # have been cut off, its publish is refused (ABANDONED cannot become PUBLISHED).
                conn.execute(
                    ABANDON_EARLIER_ATTEMPTS,
                    run_of_cell | {
                        "state": VersionState.ABANDONED.value,
                        "error": f"abandoned: attempt {attempt_no} of the same run began (this attempt's process "
                        "stopped before it concluded)",
                        "ended_at": now,
                    },
                )
                conn.execute(
                    INSERT_VERSION,
                    dict(
                        version_id=version_id,
                        asset=identity.asset,
                        partition_key=identity.partition_key,
                        interval_start=iso(identity.interval.start),
                        interval_end=iso(identity.interval.end),
                        run_id=identity.logical_run_id,
                        dagster_run_id=identity.dagster_run_id,
                        attempt_no=attempt_no,
                        request_id=identity.request_id,
                        lane=identity.lane,
                        code_version=identity.code_version,
                        params_digest=identity.params_digest,
                        state=VersionState.WRITING.value,
                        expected_previous_version_id=expected["version_id"] if expected else None,
                        requested_at=identity.requested_at,
                        started_at=identity.started_at,
                        created_at=now,
                        worker=identity.worker or None,
                        params_json=canonical_json(identity.params) if identity.params else None,
                    ),
                )
                return self._get(conn, version_id)

        return retry_transient(txn)

    def mark_verifying(
        self,
        version_id: str,
        *,
        path: str,
        rows: int,
        sha256: str,
        stats: dict[str, Any],
        input_versions: dict[str, Any],
        source_fingerprint: str | None = None,
        manifest_sha256: str | None = None,
    ) -> Version:
        stats_json = json.dumps(stats, default=str)
        inputs_json = json.dumps(input_versions, sort_keys=True)
        with begin(self.engine) as conn:
            before = self._get(conn, version_id)
            self._transition(
                conn,
                version_id,
                VersionState.VERIFYING,
                from_state=before.state,
                path=path,
                rows=rows,
                sha256=sha256,
                manifest_sha256=manifest_sha256,
                stats_json=stats_json,
                input_versions_json=inputs_json,
                source_fingerprint=source_fingerprint,
            )
        # The row as the update left it, without reading it back: the update changed exactly these columns of the
        # row read above (conditional on its state), and the JSON columns decode as a read would decode them.
        return replace(
            before, state=VersionState.VERIFYING.value, path=path, rows=rows, sha256=sha256,
            manifest_sha256=manifest_sha256, stats=json.loads(stats_json), input_versions=json.loads(inputs_json),
            source_fingerprint=source_fingerprint,
        )

    def reject(self, version_id: str, checks: list[dict[str, Any]], error: str) -> Version:
        with begin(self.engine) as conn:
            self._transition(
                conn,
                version_id,
                VersionState.REJECTED,
                checks_json=json.dumps(checks, default=str),
                error=error,
                ended_at=iso(utc_now()),
            )
            return self._get(conn, version_id)

    def abandon(self, version_id: str, reason: str) -> Version:
        with begin(self.engine) as conn:
            self._transition(conn, version_id, VersionState.ABANDONED, error=reason, ended_at=iso(utc_now()))
            return self._get(conn, version_id)

    def purge(self, version_id: str) -> Version:
        with begin(self.engine) as conn:
            self._transition(conn, version_id, VersionState.PURGED)
            return self._get(conn, version_id)

    # ---- pointers ---------------------------------------------------------------------------------------------

    def publish(self, version_id: str, checks: list[dict[str, Any]]) -> PointerMove:
        """CAS the pointer from the version seen at ``begin_version`` to ``version_id``.

        Raises ``PublishConflict`` (and changes nothing) when another version was published in between.
        The pointer row serializes publishers of one partition; the global ``log_head`` lock is taken last, so
        it is held only for the log insert and the commit while publishes of other partitions proceed. On
        PostgreSQL the same steps run as one server-side function (``publish_pg``): one round trip, and the
        lock is held from the log insert to the commit only.
        """
        if self.engine.dialect.name == "postgresql":
            return self._publish_pg(version_id, checks)
        try:
            with begin(self.engine) as conn:
                version, current = self._get_with_pointer(conn, version_id)
                check_transition(version_id, version.state, VersionState.PUBLISHED)
                now = iso(utc_now())
                seq = self._cas_publish(
                    conn, version, current, now, checks_json=json.dumps(checks, default=str), ended_at=now
                )
                fault_point(IN_PUBLISH_TRANSACTION)
        except sa.exc.IntegrityError as exc:
            self._lost_first_publish(version_id, exc)
        return _published_move(seq, version, checks, now)

    def _publish_pg(self, version_id: str, checks: list[dict[str, Any]]) -> PointerMove:
        """``publish`` on PostgreSQL: the same steps in one server-side function (``publish_pg``), one statement."""
        now = iso(utc_now())
        try:
            with begin(self.engine) as conn:
                if self.in_transaction_switches:
                    self._switch_before_publish(conn, version_id)
                # One round trip; the log_head lock it takes last is held until the commit just below.
                seq, version = publish_pg.call(conn, version_id, json.dumps(checks, default=str), now)
                fault_point(IN_PUBLISH_TRANSACTION)
        except sa.exc.IntegrityError as exc:
            self._lost_first_publish(version_id, exc)
        return _published_move(seq, version, checks, now)

    def _switch_before_publish(self, conn: Connection, version_id: str) -> None:
        """The in-transaction switches of a publish that may succeed (its state may publish, its pointer is the
        one it expects); the publish function, called next, refuses the others and takes the switches back."""
        try:
            version, current = self._get_with_pointer(conn, version_id)
        except NotFound:
            return
        if version.state in publish_pg.FROM_STATES and current == version.expected_previous_version_id:
            self._switch_in_transaction(conn, version, ACTION_PUBLISH)

    def _lost_first_publish(self, version_id: str, exc: Exception) -> NoReturn:
        # Two first publishes of one partition: the pointer's primary key let exactly one insert win.
        winner = self.current(*parse_version_id(version_id)[:2])
        winner_id = winner.version_id if winner else None
        raise PublishConflict(f"lost the publish race to {winner_id} (expected current none)", winner_id) from exc

    def record_repair(self, version_id: str, reason: str) -> int:
        """Log that a crash gap of a published version was repaired (the pointer does not move)."""
        with begin(self.engine) as conn:
            seq = self._next_seq(conn)
            version = self._get(conn, version_id)
            self._log(conn, seq, version, None, ACTION_REPAIR, iso(utc_now()), version.request_id, version.lane, reason)
            return seq


def _published_move(seq: int, version: Version, checks: list[dict[str, Any]], now: str) -> PointerMove:
    """The pointer move of a publish of ``version`` (as read before it, in VERIFYING) committed at ``now``."""
    published = replace(version, state=VersionState.PUBLISHED.value, checks=checks, ended_at=now, published_at=now)
    return PointerMove(
        seq, version.asset, version.partition_key, version.version_id, version.expected_previous_version_id,
        ACTION_PUBLISH, version=published,
    )
