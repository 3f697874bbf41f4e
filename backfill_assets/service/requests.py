"""Requests: the dry run, create, list, show, progress and confirm (``Backfills``' operations on requests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.plan.chunking import planned_runs
from backfill_assets.engine.plan.planning import CREATE, decide
from backfill_assets.engine.plan.reconcile import count_decisions, decisions_now
from backfill_assets.engine.store.asset_owners import refuse_foreign
from backfill_assets.engine.store.ledger import Ledger, validate_request_id
from backfill_assets.engine.store.operations import Operations
from backfill_assets.engine.store.pauses import Pauses

from .context import ServiceContext
from .records import (
    CreatedRequest,
    PlannedCell,
    PlannedRun,
    Progress,
    Request,
    RequestDetail,
    RequestPlan,
    RequestSummary,
)


def plan(service: ServiceContext, spec: M.RequestSpec) -> RequestPlan:
    cells = _dry_run(service, spec)
    creates = [(c.asset, c.partition_key) for c in cells if c.action == CREATE]
    runs = tuple(
        PlannedRun(run.partitions[0], run.partitions[-1], len(run.partitions), tuple(run.assets))
        for run in planned_runs(service.graph, spec, creates)
    )
    return RequestPlan(spec, service.code_version(), service.queue_limits().concurrency(spec), cells, runs)


def _dry_run(service: ServiceContext, spec: M.RequestSpec) -> tuple[PlannedCell, ...]:
    """Each cell's decision as the driver would take it now, in submission order; writes nothing. The facts are
    the catalog's and Dagster's runs in flight, read for every cell at once."""
    cells = [(a, p) for p in spec.ordered_partitions() for a in spec.assets]
    facts_of = service.require_dagster("the dry run (Dagster's runs in flight)").cell_facts(
        service.graph, service.catalog, cells)
    decided = ((asset, partition, decide(spec, service.graph[asset], facts_of(asset, partition)))
               for asset, partition in cells)
    return tuple(PlannedCell(asset, partition, d.action, d.reason) for asset, partition, d in decided)


def create(service: ServiceContext, spec: M.RequestSpec) -> CreatedRequest:
    # Refused here, not by each run: a request for another location's asset would only fail day after day.
    refuse_foreign(service.catalog.engine, spec.assets, service.graph.location)
    concurrency = service.queue_limits().concurrency(spec)
    created = freeze(service, spec)
    # Its first runs queued now, not at the daemon's next pass over the driver sensor (~5 s on Dagster's own).
    service.drive_now(created.request_id)
    return CreatedRequest(created, concurrency)


def freeze(
    service: ServiceContext, spec: M.RequestSpec, left_out: Mapping[tuple[str, str], str] | None = None,
    request_id: str | None = None, message: str | None = None,
) -> Request:
    """The one place a request enters the ledger: a spec (validated by ``create``, or built by the service for a
    consumer cascade or an adopted Dagster backfill) frozen with the code version now, its claims and its cells.
    ``left_out``: the cells held out, with their reason (by default the side effects the spec does not authorize;
    an adopted backfill holds none out: Dagster launches them and admission decides)."""
    excluded = spec.excluded_cells(service.graph) if left_out is None else dict(left_out)
    if spec.system_user is None:
        spec = replace(spec, system_user=service.seen_user)
    code = service.code_version()
    with service.atomic():
        record = Ledger(service.catalog).create(
            request_id or M.new_request_id(utc_now()), spec, code, excluded, source=service.source, message=message,
        )
        created = Request.of(record)
        service.record("create", created.request_id, f"created ({created.status}): {len(spec.assets)} asset(s) "
                       f"× {len(spec.partitions)} day(s), code version {created.code_version}", created.request_id,
                       spec.reason, spec.requested_by)
    service.wake()
    return created


def list_requests(service: ServiceContext, statuses: Sequence[str] = ()) -> list[RequestSummary]:
    if isinstance(statuses, str):  # one status given bare: a str is a Sequence of its letters
        statuses = [statuses]
    chosen = M.statuses_named(statuses)
    ledger = Ledger(service.catalog)
    paused = Pauses(service.catalog).current()
    return [
        RequestSummary(
            Request.of(record), paused.get(record.request_id),
            count_decisions(c.decision for c in decisions_now(
                service.catalog, record.request_id, ledger.cells(record.request_id)
            )),
        )
        for record in ledger.list(statuses=chosen)
    ]


def show(service: ServiceContext, request_id: str) -> RequestDetail:
    ledger = Ledger(service.catalog)
    record = ledger.get(validate_request_id(request_id))
    cells = tuple(decisions_now(service.catalog, request_id, ledger.cells(request_id)))
    pauses = Pauses(service.catalog)
    return RequestDetail(
        Request.of(record), pauses.current([request_id]).get(request_id), tuple(pauses.history(request_id)),
        count_decisions(c.decision for c in cells), cells, tuple(Operations(service.catalog).of_request(request_id)),
        service.queue_limits().concurrency(record.spec),
    )


def progress(service: ServiceContext, request_id: str) -> Progress:
    ledger = Ledger(service.catalog)
    record = ledger.get(validate_request_id(request_id))
    return Progress(request_id, M.RequestStatus(record.status), record.message, ledger.counts(request_id))


def confirm(service: ServiceContext, request_id: str) -> Request:
    ledger = Ledger(service.catalog)
    record = ledger.get(validate_request_id(request_id))
    if record.status in M.CLOSED_STATUSES:
        raise InvalidInput(f"request {request_id} is {record.status}")
    with service.atomic():
        ledger.confirm(request_id)
        service.record("confirm", request_id, "cascade confirmed", request_id)
    service.wake()
    return Request.of(ledger.get(request_id))
