"""Every try of one cell (Airflow's task tries), whoever made it: the attempts recorded in ``versions`` (any
request, production, manual runs) with the request that asked for each, and the runs that never wrote a version
(a run that failed before writing): a request's latest run of the cell from its ``request_items``, and every other
Dagster run that was to write the cell (a relaunched run, a production run) as the caller read them from Dagster
(``RunTouch``; the service reads them, ``integration/runs/cell_runs.py``).

One query function returning plain dicts, shared by ``request show ID --cell`` and ``versions`` so the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import sqlalchemy as sa

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.identity import validate_asset_name, validate_partition_key
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.schema import request_items, requests, versions
from backfill_assets.engine.store.transactions import read

# The fields of a try that comes from a version, in the order ``request show --cell`` shows them.
VERSION_FIELDS = (
    "version_id", "logical_run_id", "dagster_run_id", "attempt_no", "state", "lane", "request_id", "worker",
    "code_version", "requested_at", "started_at", "ended_at", "published_at", "error",
)


@dataclass(frozen=True)
class RunTouch:
    """A Dagster run that was to write the cell (its partition and asset selected), as Dagster records it."""

    run_id: str
    status: str  # Dagster's: SUCCESS, FAILURE, CANCELED, STARTED, QUEUED, ...
    lane: str
    request_id: str | None
    created_at: str | None  # UTC ISO-8601, as every stored time
    ended_at: str | None = None

    @property
    def what_happened(self) -> str:
        ended = self.status in ("SUCCESS", "FAILURE", "CANCELED")
        return f"run {self.status.lower()}" + (", no version written" if ended else "")


def cell_tries(
    catalog: Catalog, asset: str, partition_key: str, request_id: str | None = None,
    runs: Iterable[RunTouch] = (),
) -> list[dict[str, Any]]:
    """Every try of (``asset``, ``partition_key``), oldest first, as plain dicts.

    A try with a version has the version's identity, state, lane, worker, the four times, its blocking checks
    (name, passed) and error (why it was rejected or abandoned), and the request that asked for it with its
    ``requested_by`` and ``request_reason`` (None for production and manual runs). A try without a version
    (``version_written`` false) is a request's run of the cell that wrote nothing: its Dagster run, when the
    request submitted it, and the ledger's decision and reason for it. ``this_request`` marks the tries of
    ``request_id``.

    Only a request's latest run of a cell is in its ledger: an earlier run that failed before writing and was
    relaunched, or a production run that failed before writing, is known to Dagster only, so ``runs`` (the Dagster
    runs that were to write the cell) adds them: each run that neither wrote a version nor is a ledger's run is a
    try without a version, with ``decision`` None. Every try has ``run_status``, its Dagster run's status when
    ``runs`` has it (None otherwise).
    """
    validate_asset_name(asset)
    validate_partition_key(partition_key)
    runs = tuple(runs)
    asked = (requests.c.requested_by, requests.c.reason.label("request_reason"))
    with read(catalog.reader, catalog.engine) as conn:
        written = conn.execute(
            sa.select(versions, *asked)
            .select_from(versions.outerjoin(requests, requests.c.request_id == versions.c.request_id))
            .where(versions.c.asset == asset, versions.c.partition_key == partition_key)
            .order_by(versions.c.created_at, versions.c.version_id)
        ).all()
        launched = conn.execute(
            sa.select(request_items, *asked)
            .join(requests, requests.c.request_id == request_items.c.request_id)
            .where(
                request_items.c.asset == asset,
                request_items.c.partition_key == partition_key,
                request_items.c.run_id.is_not(None),
            )
        ).all()
    tries = [_version_try(row) for row in written]
    runs_with_a_version = {t["dagster_run_id"] for t in tries}
    tries += [_run_without_version(row) for row in launched if row.run_id not in runs_with_a_version]
    tries += _dagster_only_tries(catalog, {t["dagster_run_id"] for t in tries}, runs)
    status_of = {r.run_id: r.status for r in runs}
    for t in tries:
        t["run_status"] = status_of.get(t["dagster_run_id"])
    tries.sort(key=lambda t: t.pop("_at") or "")
    # A person's accept / reject of a try's version (backfill-assets accept / reject), oldest first.
    overrides = catalog.overrides_of_cell(asset, partition_key)
    for t in tries:
        t["this_request"] = request_id is not None and t["request_id"] == request_id
        t["overrides"] = [o.as_dict() for o in overrides if t["version_id"] and o.version_id == t["version_id"]]
    return tries


def _version_try(row: sa.Row[Any]) -> dict[str, Any]:
    version = Version.from_row(row)
    out = {name: getattr(version, name) for name in VERSION_FIELDS}
    out.update(
        checks=[{"name": c.get("name"), "passed": bool(c.get("passed"))} for c in version.checks or []],
        requested_by=row.requested_by,
        request_reason=row.request_reason,
        version_written=True,
        decision=None,
        _at=version.created_at,
    )
    return out


def _run_without_version(row: sa.Row[Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(VERSION_FIELDS)
    out.update(
        dagster_run_id=row.run_id,
        lane=T.LANE_BACKFILL,  # every run a request launches is in the backfill lane
        request_id=row.request_id,
        requested_at=row.submitted_at,
        error=row.reason,
        checks=[],
        requested_by=row.requested_by,
        request_reason=row.request_reason,
        version_written=False,
        decision=row.decision,
        _at=row.submitted_at or row.updated_at,
    )
    return out


def _dagster_only_tries(catalog: Catalog, known: set[str], runs: Iterable[RunTouch]) -> list[dict[str, Any]]:
    """The tries of the Dagster runs neither a version nor a ledger knows (a relaunched run, a production run that
    failed before writing), with the request that asked for each."""
    unknown = {r.run_id: r for r in runs if r.run_id not in known}
    request_ids = sorted({r.request_id for r in unknown.values() if r.request_id})
    asked: dict[str, sa.Row[Any]] = {}
    if request_ids:
        with read(catalog.reader, catalog.engine) as conn:
            asked = {row.request_id: row for row in conn.execute(
                sa.select(requests.c.request_id, requests.c.requested_by, requests.c.reason)
                .where(requests.c.request_id.in_(request_ids))
            )}
    tries = []
    for run in unknown.values():
        out: dict[str, Any] = dict.fromkeys(VERSION_FIELDS)
        by = asked.get(run.request_id or "")
        out.update(
            dagster_run_id=run.run_id, lane=run.lane, request_id=run.request_id, requested_at=run.created_at,
            ended_at=run.ended_at, error=run.what_happened, checks=[],
            requested_by=by.requested_by if by is not None else None,
            request_reason=by.reason if by is not None else None,
            version_written=False, decision=None, _at=run.created_at,
        )
        tries.append(out)
    return tries
