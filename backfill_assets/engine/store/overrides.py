"""The ``overrides`` rows and the pointer moves they make: an operator's accept (a REJECTED version published by the
publish compare-and-swap) and reject (the current version rolled back and marked REJECTED), and cell skip marks.

Mixed into ``Catalog``: an accept or reject is one transaction with the pointer swap, the state changes, the
``publish_log`` row and its ``overrides`` row, so the audit trail can never miss a move nor name one that did not
happen.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from backfill_assets.engine.model.errors import PublishConflict
from backfill_assets.engine.model.intervals import iso, utc_now
from backfill_assets.engine.model.overrides import SKIP_MARKS, Override, OverrideAction
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.store.catalog_queries import ACTION_PUBLISH
from backfill_assets.engine.store.catalog_records import PointerMove
from backfill_assets.engine.store.rollbacks import Rollbacks
from backfill_assets.engine.store.schema import overrides
from backfill_assets.engine.store.transactions import begin, read

Cell = tuple[str, str]
_CHUNK = 500  # bounded IN lists: SQLite limits bound parameters per statement


class OverrideLog(Rollbacks):
    """Overrides; the publish and rollback steps it takes inside its transaction (``_get_with_pointer``,
    ``_cas_publish``, ``_roll_back``) it inherits from ``Rollbacks``."""

    # ---- accept / reject ------------------------------------------------------------------------------------------

    def accept_version(
        self, version_id: str, by: str, reason: str, system_user: str | None = None
    ) -> tuple[PointerMove, Override]:
        """Publish a REJECTED version by the same compare-and-swap as a normal publish, from the version it expected
        when its attempt began. Refused (PublishConflict, nothing written) when the pointer has moved since: a newer
        version was published (or restored) after it was judged, and accepting would silently replace that."""
        with begin(self.engine) as conn:
            version, current = self._get_with_pointer(conn, version_id)
            expected = version.expected_previous_version_id
            if current != expected:
                raise PublishConflict(
                    f"{version_id} cannot be accepted: {current} became current for {version.asset} "
                    f"{version.partition_key} after it was judged (it replaces {expected or 'nothing'}); accepting "
                    "would replace newer data — roll back first or re-run the day",
                    current,
                )
            now = iso(utc_now())
            seq = self._cas_publish(
                conn, version, current, now, override=True, reason=f"accepted by {by}: {reason}"
            )
            record = _add(conn, OverrideAction.ACCEPT, version.asset, version.partition_key, version_id, by, reason,
                          now, seq, system_user)
        published = replace(version, state=VersionState.PUBLISHED.value, published_at=now)
        move = PointerMove(seq, version.asset, version.partition_key, version_id, expected, ACTION_PUBLISH,
                           version=published)
        return move, record

    def reject_current(
        self, asset: str, partition_key: str, bad_version_id: str, restore_version_id: str, by: str, reason: str,
        system_user: str | None = None,
    ) -> tuple[PointerMove, Override]:
        """Roll ``bad_version_id`` (still current, else refused) back to ``restore_version_id`` and mark it REJECTED
        with the reason, so no rollback ever restores it again."""
        with begin(self.engine) as conn:
            now = iso(utc_now())
            move = self._roll_back(
                conn,
                asset,
                partition_key,
                f"rejected by {by}: {reason}",
                restore_version_id,
                bad_version_id=bad_version_id,
                bad_state=VersionState.REJECTED,
                now=now,
                error=f"rejected after publish by {by}: {reason}",
            )
            record = _add(conn, OverrideAction.REJECT, asset, partition_key, bad_version_id, by, reason, now, move.seq,
                          system_user)
        return move, record

    def record_registration(
        self, version_id: str, asset: str, partition_key: str, by: str, reason: str, publish_seq: int | None,
        system_user: str | None = None,
    ) -> Override:
        """Who approved registering a file as ``version_id`` and why (``publish_seq``: its publish, None when its
        checks rejected it); inside the service's transaction, with the publish or the rejection."""
        with begin(self.engine) as conn:
            return _add(conn, OverrideAction.REGISTER, asset, partition_key, version_id, by, reason, iso(utc_now()),
                        publish_seq, system_user)

    # ---- skip marks -----------------------------------------------------------------------------------------------

    def mark_skipped(
        self, cells: Iterable[Cell], by: str, reason: str, system_user: str | None = None
    ) -> list[Override]:
        """Mark cells deliberately skipped (a cell already marked gets a newer mark: the newest says who and why)."""
        now = iso(utc_now())
        with begin(self.engine) as conn:
            return [_add(conn, OverrideAction.SKIP, a, p, None, by, reason, now, None, system_user) for a, p in cells]

    def unmark_skipped(
        self, cells: Iterable[Cell], by: str, reason: str, system_user: str | None = None
    ) -> list[Override]:
        """Withdraw the skip marks of those ``cells`` that have one; returns the ``unskip`` rows written."""
        wanted = list(cells)
        now = iso(utc_now())
        with begin(self.engine) as conn:
            marked = _active_marks(conn, wanted)
            return [
                _add(conn, OverrideAction.UNSKIP, a, p, None, by, reason, now, None, system_user)
                for a, p in wanted if (a, p) in marked
            ]

    # ---- reads ----------------------------------------------------------------------------------------------------

    def skip_marks(self, cells: Iterable[Cell]) -> dict[Cell, Override]:
        """The cells among ``cells`` marked skipped now, with their (newest) mark."""
        with read(self.reader, self.engine) as conn:
            return _active_marks(conn, list(cells))

    def overrides_of_cell(self, asset: str, partition_key: str) -> list[Override]:
        """Every override of one cell and its versions, oldest first."""
        return self.overrides_of_cells([(asset, partition_key)]).get((asset, partition_key), [])

    def overrides_of_cells(self, cells: Iterable[Cell]) -> dict[Cell, list[Override]]:
        """cell → every override of it and its versions, oldest first (cells without one are left out)."""
        with read(self.reader, self.engine) as conn:
            return _of_cells(conn, list(cells))


def _add(
    conn: Connection,
    action: OverrideAction,
    asset: str,
    partition_key: str,
    version_id: str | None,
    by: str,
    reason: str,
    at: str,
    publish_seq: int | None = None,
    system_user: str | None = None,
) -> Override:
    values: dict[str, Any] = dict(
        action=action.value, asset=asset, partition_key=partition_key, version_id=version_id, decided_by=by,
        reason=reason, at=at, publish_seq=publish_seq, system_user=system_user,
    )
    new_id = conn.execute(overrides.insert().values(**values).returning(overrides.c.id)).scalar_one()
    return Override.from_row({**values, "id": new_id})


def _of_cells(
    conn: Connection, cells: list[Cell], actions: Iterable[OverrideAction] = ()
) -> dict[Cell, list[Override]]:
    wanted = set(cells)
    assets = sorted({a for a, _ in wanted})
    keys = sorted({p for _, p in wanted})
    criteria = [overrides.c.action.in_([a.value for a in actions])] if actions else []
    found: dict[Cell, list[Override]] = {}
    for start in range(0, len(keys), _CHUNK):
        rows = conn.execute(
            sa.select(overrides)
            .where(
                *criteria,
                overrides.c.asset.in_(assets),
                overrides.c.partition_key.in_(keys[start : start + _CHUNK]),
            )
            .order_by(overrides.c.id)
        ).all()
        for r in rows:
            if (r.asset, r.partition_key) in wanted:
                found.setdefault((r.asset, r.partition_key), []).append(Override.from_row(r._asdict()))
    return found


def _active_marks(conn: Connection, cells: list[Cell]) -> dict[Cell, Override]:
    """The newest skip / unskip row of each cell decides: marked when it is a ``skip``."""
    marks = _of_cells(conn, cells, SKIP_MARKS)
    return {cell: rows[-1] for cell, rows in marks.items() if rows[-1].action is OverrideAction.SKIP}
