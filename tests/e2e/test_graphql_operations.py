"""Every door: the operations' Launchpad jobs driven through Dagster's GraphQL API with Dagster's own Python client
(``dagster_graphql.DagsterGraphQLClient``), as a script would drive Airflow's REST API, against a real
``dagster-webserver``. The webserver launches the runs itself (Dagster's DefaultRunCoordinator, no daemon), so the
request stays where each operation leaves it: nothing else moves it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import dagster as dg
import pytest
import yaml
from dagster_graphql import DagsterGraphQLClient

from backfill_assets import backfills_for_instance
from backfill_assets.engine.store import db
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.engine.store.pauses import Pauses
from backfill_assets.examples.orders.domain import RAW_ORDERS, REVENUE_ALERT
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.operation_jobs import op_name
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.service import Backfills, RequestInput
from tests.orders import DEFS

from .conftest import prepare_home
from .services import Webserver, stop_process

DAYS = ["2022-10-03", "2022-10-04"]
RUN_TIMEOUT = 120.0
FINISHED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)


@dataclass
class Served:
    home: Path
    instance: dg.DagsterInstance
    client: DagsterGraphQLClient
    backfills: Backfills

    def run(self, job: str, config: dict, op: str | None = None, user: str = "ana@example.com") -> dg.DagsterRun:
        """Submit ``job`` as a GraphQL script does (its config under the job's one op) and wait for its end."""
        return self._finished(self.client.submit_job_execution(
            job, run_config={"ops": {op or op_name(job): {"config": config}}}, tags={"dagster/user": user},
        ))

    def launch(self, job: str, tags: dict[str, str]) -> dg.DagsterRun:
        """Launch ``job`` with ``tags`` and no config, as a script does, and wait for its end."""
        return self._finished(self.client.submit_job_execution(job, tags=tags))

    def _finished(self, run_id: str) -> dg.DagsterRun:
        deadline = time.monotonic() + RUN_TIMEOUT
        while self.client.get_run_status(run_id) not in FINISHED:
            assert time.monotonic() < deadline, f"run {run_id} did not finish in {RUN_TIMEOUT} s"
            time.sleep(0.2)
        return self.instance.get_run_by_id(run_id)

    def failures_of(self, run: dg.DagsterRun) -> dict[str, str]:
        """Each failed step's last failure message."""
        return {e.step_key: e.dagster_event.step_failure_data.user_failure_data.description
                for e in self.instance.all_logs(run.run_id) if e.is_dagster_event and e.dagster_event.is_step_failure}

    def failure_of(self, run: dg.DagsterRun) -> str:
        [failure] = [e for e in self.instance.all_logs(run.run_id)
                     if e.is_dagster_event and e.dagster_event.is_step_failure]
        return failure.dagster_event.step_failure_data.user_failure_data.description


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterable[Served]:
    home = tmp_path_factory.mktemp("graphql") / "dagster_home"
    with pytest.MonkeyPatch.context() as mp:
        prepare_home(mp, home, seed_from=DAYS[0], seed_to=DAYS[-1])
        (home / "dagster.yaml").write_text(yaml.safe_dump(
            {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}}
        ))
        instance = dg.DagsterInstance.get()
        server = Webserver(home)
        try:
            server.wait_ready()
            client = DagsterGraphQLClient("127.0.0.1", port_number=server.port)
            yield Served(home, instance, client, backfills_for_instance(DEFS, instance))
        finally:
            stop_process(server.proc)
            instance.dispose()
            db.dispose_all()


def test_a_script_creates_pauses_resumes_and_cancels_a_request_through_graphql(served):
    created = served.run(REQUEST_JOB, {"assets": [RAW_ORDERS], "from_day": DAYS[0], "to_day": DAYS[-1],
                                       "reason": "from a script"}, op=REQUEST_OP)
    assert created.status == dg.DagsterRunStatus.SUCCESS
    [request] = [s.request for s in served.backfills.list() if s.request.spec.reason == "from a script"]
    assert (request.source, request.spec.requested_by) == ("launchpad", "ana@example.com")
    request_id = request.request_id

    paused = served.run("backfill_pause", {"request_id": request_id, "reason": "warehouse maintenance"})
    assert paused.status == dg.DagsterRunStatus.SUCCESS
    pause = Pauses(served.backfills.catalog).current([request_id])[request_id]
    assert (pause.paused_by, pause.reason) == ("ana@example.com", "warehouse maintenance")

    resumed = served.run("backfill_resume", {"request_id": request_id}, user="bo")
    assert resumed.status == dg.DagsterRunStatus.SUCCESS
    assert served.backfills.progress(request_id).status == "open"
    assert Pauses(served.backfills.catalog).history(request_id)[-1].resumed_by == "bo"

    cancelled = served.run("backfill_cancel", {"request_id": request_id})
    assert cancelled.status == dg.DagsterRunStatus.SUCCESS
    assert Ledger(served.backfills.catalog).get(request_id).status == "cancelled"


def test_a_bad_operation_fails_its_run_with_the_services_message_and_changes_nothing(served):
    request_id = served.backfills.create(RequestInput(assets=[RAW_ORDERS], from_day=DAYS[0], to_day=DAYS[0],
                                                      requested_by="ana")).request.request_id
    with pytest.raises(Exception) as python:  # the Python caller's words, for the same input
        served.backfills.resume(request_id, by="bo")
    failed = served.run("backfill_resume", {"request_id": request_id})
    assert failed.status == dg.DagsterRunStatus.FAILURE
    assert served.failure_of(failed) == str(python.value) == f"request {request_id} is not paused (it is open)"

    bad_by = served.run("backfill_pause", {"request_id": request_id, "by": "   "})
    assert served.failure_of(bad_by) == "by must name someone"
    assert served.backfills.progress(request_id).status == "open"
    assert Pauses(served.backfills.catalog).history(request_id) == []


@pytest.mark.parametrize("tags", [{}, {"backfill/lane": "production"}], ids=["no tags", "a typed production lane"])
def test_a_side_effect_launched_through_graphql_without_an_approver_delivers_nothing(served, tags):
    """A script launches a past day's whole partition job: its data may be published (a person's run), but the
    alert about that day is not sent, whatever the tags say: only production's own run of today's day, or an
    approver, lets a side effect out."""
    run = served.launch(BACKFILL_JOB, {"dagster/partition": DAYS[-1], **tags})
    assert run.status == dg.DagsterRunStatus.FAILURE
    failures = served.failures_of(run)
    assert any("side effect not authorized" in f for f in failures.values()), failures
    assert deliveries(served.backfills.catalog, DAYS[-1], asset=REVENUE_ALERT) == []
