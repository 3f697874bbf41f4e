"""Publish on PostgreSQL as one server-side function: the whole CAS in one round trip.

``Catalog.publish`` on SQLite runs its statements one by one (SQLite has one writer at a time anyway). On
PostgreSQL the same steps run inside ``backfill_publish_<digest>``, which the catalog's creation and upgrade
(``db.ensure_publish_function``) create: read the version and the pointer, share-lock the request row, CAS the pointer,
the two state transitions, then — last — the ``log_head`` row lock and the ``publish_log`` row. Called as a
single statement, the ``log_head`` lock is held from the log UPDATE to the commit with no client round trip in
between, so publishers of other partitions queue behind it for microseconds instead of several round trips.

Outcomes with nothing written (unknown version, illegal state, cancelled request, stale expected pointer) are
returned as a row, which ``call`` raises as the SQLite path does; a state that moved under a transition raises
``STATE_MOVED`` (SQLSTATE), which rolls back the pointer swap already made. The function's name carries a digest
of its text, so a changed body is a new function and a process running older code keeps calling its own.
"""

from __future__ import annotations

import hashlib
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from backfill_assets.engine.model.errors import NotFound, PublishConflict, quoted
from backfill_assets.engine.model.request_model import RequestStatus
from backfill_assets.engine.model.states import ALLOWED, VersionState, check_transition
from backfill_assets.engine.store.catalog_queries import ACTION_PUBLISH
from backfill_assets.engine.store.catalog_records import Version

STATE_MOVED = "BF001"  # SQLSTATE raised when a version's state moved between the read and its transition

OK, NOT_FOUND, ILLEGAL, CANCELLED, CONFLICT = "published", "not_found", "illegal", "cancelled", "conflict"

S = VersionState
# Every state a publish may start from (check_transition decides the message when it may not).
FROM_STATES: tuple[str, ...] = tuple(sorted(s.value for s, targets in ALLOWED.items() if S.PUBLISHED in targets))

_BODY = f"""
DECLARE
  v versions;
  cur text;
  req_status text;
  n bigint;
BEGIN
  SELECT * INTO v FROM versions WHERE version_id = p_version_id;
  IF NOT FOUND THEN
    RETURN QUERY SELECT '{NOT_FOUND}'::text, NULL::text, NULL::bigint, NULL::json;
    RETURN;
  END IF;
  SELECT p.version_id INTO cur FROM pointers p WHERE p.asset = v.asset AND p.partition_key = v.partition_key;
  IF NOT (v.state = ANY (p_from_states)) THEN
    RETURN QUERY SELECT '{ILLEGAL}'::text, v.state::text, NULL::bigint, row_to_json(v);
    RETURN;
  END IF;
  IF v.request_id IS NOT NULL THEN
    -- A share lock that `request cancel` must wait for: the cancel and the publish are ordered.
    SELECT r.status INTO req_status FROM requests r WHERE r.request_id = v.request_id FOR SHARE;
    IF req_status = '{RequestStatus.CANCELLED.value}' THEN
      RETURN QUERY SELECT '{CANCELLED}'::text, cur, NULL::bigint, row_to_json(v);
      RETURN;
    END IF;
  END IF;
  IF cur IS DISTINCT FROM v.expected_previous_version_id THEN
    RETURN QUERY SELECT '{CONFLICT}'::text, cur, NULL::bigint, row_to_json(v);
    RETURN;
  END IF;
  IF v.expected_previous_version_id IS NULL THEN
    -- A racing first publish makes this a unique violation: the caller names the winner.
    INSERT INTO pointers (asset, partition_key, version_id, previous_version_id, updated_at)
    VALUES (v.asset, v.partition_key, p_version_id, NULL, p_now);
  ELSE
    UPDATE pointers SET version_id = p_version_id, previous_version_id = v.expected_previous_version_id,
                        updated_at = p_now
     WHERE asset = v.asset AND partition_key = v.partition_key AND version_id = v.expected_previous_version_id;
    IF NOT FOUND THEN
      SELECT p.version_id INTO cur FROM pointers p WHERE p.asset = v.asset AND p.partition_key = v.partition_key;
      RETURN QUERY SELECT '{CONFLICT}'::text, cur, NULL::bigint, row_to_json(v);
      RETURN;
    END IF;
  END IF;
  UPDATE versions SET state = '{S.PUBLISHED.value}', checks_json = p_checks_json, ended_at = p_now,
                      published_at = p_now
   WHERE version_id = p_version_id AND state = v.state;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '{STATE_MOVED}', MESSAGE = p_version_id;
  END IF;
  IF v.expected_previous_version_id IS NOT NULL THEN
    UPDATE versions SET state = '{S.SUPERSEDED.value}'
     WHERE version_id = v.expected_previous_version_id AND state = '{S.PUBLISHED.value}';
    IF NOT FOUND THEN
      RAISE EXCEPTION USING ERRCODE = '{STATE_MOVED}', MESSAGE = v.expected_previous_version_id;
    END IF;
  END IF;
  -- Last: the row lock that orders every publish, held from here to the commit of this one statement.
  UPDATE log_head SET seq = log_head.seq + 1 WHERE id = 1 RETURNING log_head.seq INTO n;
  INSERT INTO publish_log (seq, asset, partition_key, version_id, previous_version_id, action, request_id, lane,
                           reason, at)
  VALUES (n, v.asset, v.partition_key, p_version_id, v.expected_previous_version_id, '{ACTION_PUBLISH}',
          v.request_id, v.lane, NULL, p_now);
  RETURN QUERY SELECT '{OK}'::text, NULL::text, n, row_to_json(v);  -- v as read, before the update
END
"""

_SIGNATURE = "p_version_id text, p_checks_json text, p_now text, p_from_states text[]"
NAME = "backfill_publish_" + hashlib.sha256(_BODY.encode()).hexdigest()[:10]
# Only the argument types identify a function (to_regprocedure).
REGPROCEDURE = f"{NAME}(text, text, text, text[])"

DDL = f"""
CREATE FUNCTION {NAME}({_SIGNATURE})
RETURNS TABLE (o_outcome text, o_detail text, o_seq bigint, o_version json)
LANGUAGE plpgsql VOLATILE AS $body${_BODY}$body$
"""

CALL = f"SELECT o_outcome, o_detail, o_seq, o_version FROM {NAME}(:version_id, :checks_json, :now, :from_states)"


def call(conn: Connection, version_id: str, checks_json: str, now: str) -> tuple[int, Version]:
    """Publish ``version_id`` in ``conn``'s transaction: the log sequence number and the version as it was read
    (VERIFYING). Raises what the SQLite path raises when nothing was written, and ``PublishConflict`` for a state
    that moved under the function (its pointer swap is rolled back with the transaction)."""
    params = dict(version_id=version_id, checks_json=checks_json, now=now, from_states=list(FROM_STATES))
    try:
        row = conn.execute(sa.text(CALL), params).one()
    except sa.exc.DBAPIError as exc:
        if getattr(exc.orig, "pgcode", None) == STATE_MOVED:
            moved = getattr(getattr(exc.orig, "diag", None), "message_primary", None) or version_id
            raise PublishConflict(f"version {moved} changed state concurrently", None) from exc
        raise
    _raise_unless_published(version_id, row)
    _, _, seq, data = row
    return int(seq), Version.from_mapping(data)


def _raise_unless_published(version_id: str, row: Any) -> None:
    """Raise what the SQLite path raises for an outcome of the publish function that wrote nothing."""
    outcome, detail, _, data = row
    if outcome == OK:
        return
    if outcome == NOT_FOUND:
        raise NotFound(f"unknown version {quoted(version_id)}")
    version = Version.from_mapping(data)
    if outcome == ILLEGAL:
        check_transition(version_id, detail, VersionState.PUBLISHED)
    if outcome == CANCELLED:
        raise PublishConflict(f"request {version.request_id} was cancelled: none of its versions publish", detail)
    expected = version.expected_previous_version_id
    if outcome == CONFLICT:
        raise PublishConflict(f"lost the publish race to {detail} (expected current {expected or 'none'})", detail)
    raise AssertionError(f"publish of {version_id}: unexpected outcome {outcome} ({detail})")
