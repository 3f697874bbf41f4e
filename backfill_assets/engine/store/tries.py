"""Every try of one cell (Airflow's task tries), whoever made it: the attempts recorded in ``versions`` (any
request, production, manual runs) with the request that asked for each, and the runs that never wrote a version
(a run that failed before writing): a request's latest run of the cell from its ``request_items``, and every other
Dagster run that was to write the cell (a relaunched run, a production run) as the caller read them from Dagster
(``RunTouch``; the service reads them, ``integration/runs/cell_runs.py``).

One query function returning ``Try`` records, shared by ``request show ID --cell`` and ``versions`` so the two agree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

import sqlalchemy as sa

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.identity import validate_asset_name, validate_partition_key
from backfill_assets.engine.model.json_records import JsonRecord
from backfill_assets.engine.model.overrides import Override
from backfill_assets.engine.model.states import FINISHED_RUN_STATUSES, RunStatus, VersionState
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
class TryCheck(JsonRecord):
    """A blocking check's verdict on a try's version."""

    name: str | None
    passed: bool


@dataclass(frozen=True)
class Try(JsonRecord):
    """One try of a cell: a version written (its identity, state, times, checks), or a run that wrote nothing
    (``version_written`` false: the version's fields are None, ``decision`` the ledger's when a request launched
    it). Its JSON keys are ``VERSION_FIELDS`` then the rest, in this order."""

    version_id: str | None
    logical_run_id: str | None
    dagster_run_id: str | None
    attempt_no: int | None
    state: VersionState | None
    lane: str | None
    request_id: str | None
    worker: str | None
    code_version: str | None
    requested_at: str | None
    started_at: str | None
    ended_at: str | None
    published_at: str | None
    error: str | None
    checks: tuple[TryCheck, ...]
    requested_by: str | None
    request_reason: str | None
    version_written: bool
    decision: M.CellDecision | None  # the ledger's, for a request's run that wrote nothing
    run_status: RunStatus | None = None  # its Dagster run's status, when the caller's runs have it
    this_request: bool = False  # a try of the request the caller asked about
    overrides: tuple[Override, ...] = ()  # a person's accept / reject of its version, oldest first

    @classmethod
    def without_version(
        cls, dagster_run_id: str, lane: str | None, request_id: str | None, requested_at: str | None,
        error: str | None, requested_by: str | None, request_reason: str | None,
        decision: M.CellDecision | None, ended_at: str | None = None,
    ) -> Try:
        """A run that wrote nothing: no version, so every version field but its run's is None."""
        return cls(
            version_id=None, logical_run_id=None, dagster_run_id=dagster_run_id, attempt_no=None, state=None,
            lane=lane, request_id=request_id, worker=None, code_version=None, requested_at=requested_at,
            started_at=None, ended_at=ended_at, published_at=None, error=error, checks=(),
            requested_by=requested_by, request_reason=request_reason, version_written=False, decision=decision,
        )


@dataclass(frozen=True)
class RunTouch:
    """A Dagster run that was to write the cell (its partition and asset selected), as Dagster records it."""

    run_id: str
    status: RunStatus
    lane: str
    request_id: str | None
    created_at: str | None  # UTC ISO-8601, as every stored time
    ended_at: str | None = None

    @property
    def what_happened(self) -> str:
        ended = self.status in FINISHED_RUN_STATUSES
        return f"run {self.status.lower()}" + (", no version written" if ended else "")


def cell_tries(
    catalog: Catalog, asset: str, partition_key: str, request_id: str | None = None,
    runs: Iterable[RunTouch] = (),
) -> list[Try]:
    """Every try of (``asset``, ``partition_key``), oldest first.

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
    # Each try with the time it sorts by (when it was written, or its run submitted or created).
    timed = [_version_try(row) for row in written]
    runs_with_a_version = {t.dagster_run_id for _, t in timed}
    timed += [_run_without_version(row) for row in launched if row.run_id not in runs_with_a_version]
    timed += _dagster_only_tries(catalog, {t.dagster_run_id for _, t in timed if t.dagster_run_id}, runs)
    timed.sort(key=lambda at_try: at_try[0] or "")
    status_of = {r.run_id: r.status for r in runs}
    # A person's accept / reject of a try's version (backfill-assets accept / reject), oldest first.
    overrides = catalog.overrides_of_cell(asset, partition_key)
    return [
        replace(
            t, run_status=status_of.get(t.dagster_run_id or ""),
            this_request=request_id is not None and t.request_id == request_id,
            overrides=tuple(o for o in overrides if t.version_id and o.version_id == t.version_id),
        )
        for _, t in timed
    ]


def _version_try(row: sa.Row[Any]) -> tuple[str | None, Try]:
    version = Version.from_row(row)
    return version.created_at, Try(
        **{name: getattr(version, name) for name in VERSION_FIELDS if name != "state"},
        state=VersionState(version.state),
        checks=tuple(TryCheck(c.get("name"), bool(c.get("passed"))) for c in version.checks or []),
        requested_by=row.requested_by,
        request_reason=row.request_reason,
        version_written=True,
        decision=None,
    )


def _run_without_version(row: sa.Row[Any]) -> tuple[str | None, Try]:
    return row.submitted_at or row.updated_at, Try.without_version(
        dagster_run_id=row.run_id,
        lane=T.LANE_BACKFILL,  # every run a request launches is in the backfill lane
        request_id=row.request_id,
        requested_at=row.submitted_at,
        error=row.reason,
        requested_by=row.requested_by,
        request_reason=row.request_reason,
        decision=M.CellDecision(row.decision) if row.decision else None,
    )


def _dagster_only_tries(
    catalog: Catalog, known: set[str], runs: Iterable[RunTouch]
) -> list[tuple[str | None, Try]]:
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
        by = asked.get(run.request_id or "")
        tries.append((run.created_at, Try.without_version(
            dagster_run_id=run.run_id, lane=run.lane, request_id=run.request_id, requested_at=run.created_at,
            ended_at=run.ended_at, error=run.what_happened, requested_by=by.requested_by if by is not None else None,
            request_reason=by.reason if by is not None else None, decision=None,
        )))
    return tries
