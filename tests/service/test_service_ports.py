"""The service asks Dagster only through the ``DagsterPort`` it is handed (``service/ports.py``): without one it works
on the catalog alone and an operation that must ask Dagster refuses, naming what it needed; with a fake one, each
of its questions reaches the port and the port's answer is what the operation returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.plan.planning import CellFacts
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.service import Backfills, RequestInput
from backfill_assets.service.context import ServiceContext
from backfill_assets.service.ports import DagsterPort, DrivenNow, RequestRunFacts, StoppedRequestRuns
from tests.orders import GRAPH

DAYS = ["2022-09-01", "2022-09-02"]


def asked(**fields) -> RequestInput:
    return RequestInput(**{"assets": [RAW_ORDERS], "from_day": DAYS[0], "to_day": DAYS[-1], "max_active": 2,
                           "requested_by": "ana", **fields})


@dataclass
class FakeDagster(DagsterPort):
    """A Dagster with nothing in flight, one run per request it is asked to stop, and a run queue of one."""

    calls: list[str] = field(default_factory=list)

    def queue_limits(self) -> QueueLimits:
        return QueueLimits(1, [], "the fake's run queue")

    def wake_daemon(self) -> None:
        self.calls.append("wake")

    def drive_now(self, graph, catalog, request_id: str) -> DrivenNow:
        self.calls.append(f"drive_now {request_id}")
        return DrivenNow(left_to_sensor="the fake submits nothing")

    def cell_facts(self, graph, catalog, cells: Sequence[tuple[str, str]]):
        self.calls.append(f"cell_facts {len(cells)}")
        return lambda asset, partition: CellFacts()

    def request_run_facts(self, catalog, request_id: str, read=None) -> RequestRunFacts:
        self.calls.append(f"request_run_facts {request_id}")
        return RequestRunFacts()

    def stop_request_runs(self, catalog, request_id, submitted, side_effects, terminate_timeout):
        self.calls.append(f"stop {request_id} {terminate_timeout}")
        return StoppedRequestRuns(terminated=("run-1",))


def test_a_service_without_dagster_creates_shows_pauses_and_resumes_on_the_catalog_alone(env):
    backfills = Backfills(ServiceContext(graph=GRAPH, catalog=env.catalog))
    created = backfills.create(asked())
    request_id = created.request.request_id
    # No run queue known: nothing lowers the request's own max_active.
    assert (created.concurrency.effective, created.concurrency.binding) == (2, ())
    assert [s.request.request_id for s in backfills.list()] == [request_id]
    assert len(backfills.show(request_id).cells) == len(DAYS)
    assert backfills.pause(request_id, by="ana").pause.status_before == "open"
    assert backfills.resume(request_id, by="ana").status == "open"


def test_an_operation_that_must_ask_dagster_refuses_without_it_and_changes_nothing(env):
    backfills = Backfills(ServiceContext(graph=GRAPH, catalog=env.catalog))
    request_id = backfills.create(asked()).request.request_id
    refusals = {
        "the dry run": lambda: backfills.plan(asked()),
        "cancel": lambda: backfills.cancel(request_id),
        "reconcile": lambda: backfills.reconcile(request_id),
        "a cell's tries": lambda: backfills.tries(RAW_ORDERS, DAYS[0]),
    }
    for what, operation in refusals.items():
        with pytest.raises(InvalidInput, match=f"^{what}.* needs Dagster's instance and this service has none"):
            operation()
    assert Ledger(env.catalog).get(request_id).status == "open"  # the refused cancel closed nothing


def test_the_service_asks_dagster_through_its_port_and_returns_the_ports_answers(env):
    dagster = FakeDagster()
    backfills = Backfills(ServiceContext(graph=GRAPH, catalog=env.catalog, dagster=dagster))
    plan = backfills.plan(asked())
    assert plan.concurrency.effective == 1  # the port's run queue binds
    assert [c.action for c in plan.cells] == ["create"] * len(DAYS)
    created = backfills.create(asked())
    request_id = created.request.request_id
    assert backfills.reconcile(request_id).report.request.request_id == request_id
    cancelled = backfills.cancel(request_id, terminate_timeout=0.5)
    assert (cancelled.terminated_runs, cancelled.forced_runs) == (("run-1",), ())
    assert dagster.calls == [f"cell_facts {len(DAYS)}", "wake", f"drive_now {request_id}",
                             f"request_run_facts {request_id}", f"stop {request_id} 0.5"]


def test_the_instance_port_answers_every_question_the_service_declares():
    """``InstancePort`` subclasses the Protocol, so a question it forgot would answer None: each is its own."""
    from backfill_assets.integration.dagster_port import InstancePort

    declared = {name for name, value in vars(DagsterPort).items() if callable(value) and not name.startswith("_")}
    assert len(declared) == 12
    assert declared - set(vars(InstancePort)) == set()


class FailingDrive(FakeDagster):
    def drive_now(self, graph, catalog, request_id: str) -> DrivenNow:
        raise RuntimeError("the code location would not load")


def test_a_create_whose_own_driver_tick_fails_still_creates_the_request_for_the_sensor(env):
    backfills = Backfills(ServiceContext(graph=GRAPH, catalog=env.catalog, dagster=FailingDrive()))
    created = backfills.create(asked())
    cells = Ledger(env.catalog).cells(created.request.request_id)
    assert created.request.status == "open" and {c.decision for c in cells} == {"pending"}
